-- 0029: balance-history pages from the change runs (issue 28;
-- docs/store-layout.md, "Change runs"). A page read the account's newest
-- 4 x limit events from wallet_events and replayed each with its block's
-- stored operation (about 570 buffers a page of the busiest account at the
-- bench). The runs hold every field a page prints but the time; now a page
-- walks the account's runs newest first below its cursor (the open run,
-- then the closed ones, until they hold 4 x limit + 1 events below it, one
-- starts below the window, or one has no events: a genesis state or a
-- snapshot of before 0024) and decodes their changes in the worker; only
-- the events no walked run holds (above the pass's checkpoint, or after a
-- snapshot of before 0024) are read from wallet_events as before.
--
-- The times: wallet_block_times, the stored blocks' times packed 256
-- blocks a row (a base time and each block's seconds after it, NULL for a
-- block not stored), written by the balance pass up to its checkpoint
-- (wallet_block_times_refresh, also at a rewind below it). About 4 bytes
-- per stored block, under 0.2 bytes per event at the bench's density, and
-- the times of a page's events are one or two rows. Not a time in the runs:
-- a time per event is at least a byte per event, and one per run (its
-- first event's) about 4 bytes per run, about 0.9 bytes per event at the
-- bench (100,000 runs for 470,000 events): over the 32-byte budget there.
CREATE TABLE wallet_block_times (
    chunk   integer     PRIMARY KEY,  -- blocks chunk * 256 .. chunk * 256 + 255
    base    timestamptz NOT NULL,     -- the time of the chunk's first stored block
    offsets integer[]   NOT NULL      -- [i + 1]: seconds after base of block chunk * 256 + i; NULL: not stored
);
GRANT SELECT ON wallet_block_times TO wallet_api_reader;

-- The chunks of blocks from_block .. through_block written again from
-- wallet_blocks, each from its first block and up to through_block; the
-- chunks above through_block's are deleted (a rewind).
CREATE FUNCTION wallet_block_times_refresh(from_block integer, through_block integer) RETURNS void
LANGUAGE sql AS $$
DELETE FROM wallet_block_times WHERE chunk >= $1 >> 8;
INSERT INTO wallet_block_times (chunk, base, offsets)
SELECT c.chunk, c.base,
       ARRAY(SELECT extract(epoch FROM b.ts - c.base)::integer
               FROM generate_series(c.chunk * 256, c.chunk * 256 + 255) AS g(n)
               LEFT JOIN wallet_blocks b ON b.block_num = g.n AND b.block_num <= $2
              ORDER BY g.n)
  FROM (SELECT b.block_num >> 8 AS chunk, min(b.ts) AS base FROM wallet_blocks b
         WHERE b.block_num >= ($1 >> 8) << 8 AND b.block_num <= $2 GROUP BY 1) c;
$$;

SELECT wallet_block_times_refresh(0, k.through_block) FROM wallet_balance_snapshot_state k;

-- The number of events of a run's bytes (wallet::encode_run: its first varint).
CREATE FUNCTION wallet_run_count(changes bytea) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    value bigint := 0;
    shift integer := 0;
    b integer;
BEGIN
    FOR i IN 0 .. length(changes) - 1 LOOP
        b := get_byte(changes, i);
        value := value | ((b & 127)::bigint << shift);
        EXIT WHEN b < 128;
        shift := shift + 7;
    END LOOP;
    RETURN value;
END
$$;

-- The block and carrying account (another account's event, else NULL) of
-- each event of a run's bytes (wallet::decode_run's layout, which the
-- worker reads in full; this reads only what the page's statement needs:
-- the blocks whose times it gives and the accounts it names).
CREATE FUNCTION wallet_run_events(changes bytea, after_block integer)
RETURNS TABLE (block_num integer, carried_by integer)
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    pos integer := 0;
    block bigint := after_block;
    events bigint;
    changes_left bigint;
    flags bigint;
    header bigint;
    value bigint;
    shift integer;
    b integer;
BEGIN
    value := 0; shift := 0;
    LOOP b := get_byte(changes, pos); pos := pos + 1; value := value | ((b & 127)::bigint << shift); EXIT WHEN b < 128; shift := shift + 7; END LOOP;
    events := value;
    FOR e IN 1 .. events LOOP
        value := 0; shift := 0;  -- block delta
        LOOP b := get_byte(changes, pos); pos := pos + 1; value := value | ((b & 127)::bigint << shift); EXIT WHEN b < 128; shift := shift + 7; END LOOP;
        block := block + value;
        LOOP b := get_byte(changes, pos); pos := pos + 1; EXIT WHEN b < 128; END LOOP;  -- block_seq
        value := 0; shift := 0;  -- flags
        LOOP b := get_byte(changes, pos); pos := pos + 1; value := value | ((b & 127)::bigint << shift); EXIT WHEN b < 128; shift := shift + 7; END LOOP;
        flags := value;
        LOOP b := get_byte(changes, pos); pos := pos + 1; EXIT WHEN b < 128; END LOOP;  -- op type
        block_num := block;
        carried_by := NULL;
        IF flags & 2 <> 0 THEN
            value := 0; shift := 0;
            LOOP b := get_byte(changes, pos); pos := pos + 1; value := value | ((b & 127)::bigint << shift); EXIT WHEN b < 128; shift := shift + 7; END LOOP;
            carried_by := ((value >> 1) # -(value & 1))::integer;  -- zigzag
        END IF;
        value := 0; shift := 0;  -- the number of changes
        LOOP b := get_byte(changes, pos); pos := pos + 1; value := value | ((b & 127)::bigint << shift); EXIT WHEN b < 128; shift := shift + 7; END LOOP;
        changes_left := value;
        WHILE changes_left > 0 LOOP
            value := 0; shift := 0;  -- header
            LOOP b := get_byte(changes, pos); pos := pos + 1; value := value | ((b & 127)::bigint << shift); EXIT WHEN b < 128; shift := shift + 7; END LOOP;
            header := value;
            LOOP b := get_byte(changes, pos); pos := pos + 1; EXIT WHEN b < 128; END LOOP;  -- amount
            IF header >= 128 AND (header - 128) & 2 <> 0 THEN  -- the other account's name
                value := 0; shift := 0;
                LOOP b := get_byte(changes, pos); pos := pos + 1; value := value | ((b & 127)::bigint << shift); EXIT WHEN b < 128; shift := shift + 7; END LOOP;
                pos := pos + value::integer;
            END IF;
            IF header >= 128 AND (header - 128) & 1 <> 0 THEN  -- request id
                LOOP b := get_byte(changes, pos); pos := pos + 1; EXIT WHEN b < 128; END LOOP;
            END IF;
            changes_left := changes_left - 1;
        END LOOP;
        RETURN NEXT;
    END LOOP;
END
$$;

-- A page's rows (this release's module; wallet_balance_history_run_rows
-- stays, unchanged, for the previous release's until nginx reloads). Rows
-- as 0020's, and: kind 1 each walked run (n1 the last block it holds: its
-- through_block, or the checkpoint for the open run; n3 its after_block;
-- t1 its state, t2 its changes, hex); kind 2 the events no walked run holds,
-- below the cursor; kind 3 also the cursor's key (n2 its block, n3
-- block_seq * 100 + role: the page is below it); kind 4 the time of each block of the walked runs' events
-- in the window (n1 block, n2 epoch seconds); kind 5 the name of each
-- account carrying a change in them (n1 id, t1 name).
CREATE FUNCTION wallet_balance_history_page_rows(account text, before_block integer, before_key integer,
    from_time timestamptz, to_time timestamptz, scan integer, current_version smallint)
RETURNS TABLE (kind integer, n1 bigint, n2 bigint, n3 bigint, n4 bigint, n5 bigint, n6 bigint,
               t1 text, t2 text, t3 text, t4 text)
LANGUAGE sql STABLE AS $$
WITH RECURSIVE bounds AS (SELECT s.indexed_block, (SELECT id FROM wallet_accounts WHERE name = $1) AS account_id,
                       least(s.indexed_block + 1, CASE WHEN $5 IS NULL THEN 2147483647 ELSE wallet_first_block_at($5) END) AS end_block,
                       CASE WHEN $4 IS NULL THEN 0 ELSE wallet_first_block_at($4) END AS lower_block,
                       s.first_block, s.loading_from, s.stored_version
                  FROM wallet_store_state s),
   st AS (SELECT b.*, CASE WHEN $2 < b.end_block THEN $2 ELSE b.end_block END AS ub,
                      CASE WHEN $2 < b.end_block THEN $3 ELSE 0 END AS uk FROM bounds b),
   pos AS (SELECT st.*, CASE WHEN st.uk > 0 THEN st.ub ELSE st.ub - 1 END AS at_block FROM st),
   outdated AS (SELECT o.outdated_from, o.outdated_to FROM wallet_balance_readiness($7) o WHERE (SELECT stored_version FROM bounds) < $7),
   undecodable AS (SELECT u.block_num, u.op_type FROM wallet_balance_undecodable u, pos
                    WHERE u.account_id = pos.account_id AND u.block_num <= pos.at_block ORDER BY u.block_num LIMIT 1),
   open_run AS MATERIALIZED (SELECT o.after_block, (SELECT k.through_block FROM wallet_balance_snapshot_state k) AS through_block,
                                    o.state, o.changes FROM wallet_balance_open_runs o
                              WHERE o.account_id = (SELECT account_id FROM pos) AND o.after_block < (SELECT ub FROM pos)),
   newest AS (SELECT * FROM open_run
              UNION ALL
              (SELECT c.after_block, c.through_block, c.state, c.changes FROM wallet_balance_runs c
                WHERE c.account_id = (SELECT account_id FROM pos) AND c.after_block < (SELECT ub FROM pos)
                  AND NOT EXISTS (SELECT 1 FROM open_run)
                ORDER BY c.after_block DESC LIMIT 1)),
   -- Newest first; `counted`: the events below the cursor of the runs so far (none starts below block 0).
   walk AS (SELECT n.after_block, n.through_block, n.state, n.changes, wallet_run_count(n.changes) AS events,
                   CASE WHEN n.through_block < (SELECT ub FROM pos) THEN wallet_run_count(n.changes) ELSE 0 END AS counted
              FROM newest n
            UNION ALL
            SELECT c.after_block, c.through_block, c.state, c.changes, wallet_run_count(c.changes),
                   w.counted + wallet_run_count(c.changes)
              FROM walk w CROSS JOIN LATERAL (
                   SELECT r.after_block, r.through_block, r.state, r.changes FROM wallet_balance_runs r
                    WHERE r.account_id = (SELECT account_id FROM pos) AND r.after_block < w.after_block
                    ORDER BY r.after_block DESC LIMIT 1) c
             WHERE w.counted <= $6 AND w.events > 0 AND w.after_block > 0 AND w.after_block >= (SELECT lower_block FROM pos)),
   -- The blocks no walked run holds, below the cursor: after each run up to the next one's start (none
   -- between runs since 0024) and after the newest; after nothing when the account has no run.
   gaps AS (SELECT g.lo, g.hi FROM (
              SELECT w.through_block AS lo,
                     least(coalesce(lead(w.after_block) OVER (ORDER BY w.after_block), 2147483647), (SELECT ub FROM pos)) AS hi
                FROM walk w
              UNION ALL
              SELECT -1, (SELECT ub FROM pos) WHERE NOT EXISTS (SELECT 1 FROM walk)) g
             WHERE g.hi > g.lo),
   run_events AS (SELECT e.block_num, e.carried_by FROM walk w CROSS JOIN LATERAL wallet_run_events(w.changes, w.after_block) e
                   WHERE e.block_num <= (SELECT ub FROM pos) AND e.block_num >= (SELECT lower_block FROM pos)),
   chunks AS (SELECT c.chunk, c.base, c.offsets FROM (SELECT DISTINCT r.block_num >> 8 AS chunk FROM run_events r) d
                CROSS JOIN LATERAL (SELECT t.chunk, t.base, t.offsets FROM wallet_block_times t WHERE t.chunk = d.chunk LIMIT 1) c)
   SELECT 0 AS kind, pos.indexed_block::bigint, pos.at_block::bigint, pos.account_id::bigint, pos.first_block::bigint,
          pos.loading_from::bigint, NULL::bigint, (SELECT outdated_from::text FROM outdated), (SELECT outdated_to::text FROM outdated),
          (SELECT block_num::text FROM undecodable), (SELECT wallet_op_type_name(op_type) FROM undecodable)
     FROM pos
   UNION ALL SELECT 1, w.through_block::bigint, NULL, w.after_block::bigint, NULL, NULL, NULL, encode(w.state, 'hex'),
          encode(w.changes, 'hex'), NULL, NULL FROM walk w
   UNION ALL SELECT 3, pos.lower_block::bigint, pos.ub::bigint, pos.uk::bigint, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM pos
   UNION ALL SELECT 4, r.block_num::bigint,
          coalesce(extract(epoch FROM c.base)::bigint + c.offsets[(r.block_num & 255) + 1],
                   (SELECT extract(epoch FROM b.ts)::bigint FROM wallet_blocks b WHERE b.block_num = r.block_num)),
          NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
     FROM (SELECT DISTINCT block_num FROM run_events) r LEFT JOIN chunks c ON c.chunk = r.block_num >> 8
   UNION ALL SELECT 5, a.id::bigint, NULL, NULL, NULL, NULL, NULL, a.name::text, NULL, NULL, NULL
     FROM (SELECT DISTINCT carried_by FROM run_events WHERE carried_by IS NOT NULL) d
     CROSS JOIN LATERAL (SELECT x.id, x.name FROM wallet_accounts x WHERE x.id = d.carried_by LIMIT 1) a
   UNION ALL SELECT 2, e.block_num::bigint, e.block_seq::bigint, extract(epoch FROM e.ts)::bigint, NULL, NULL, NULL,
          CASE WHEN e.account_id = (SELECT account_id FROM pos) THEN $1
               ELSE (SELECT a.name FROM wallet_accounts a WHERE a.id = e.account_id) END, wallet_role_name(e.role)::text,
          wallet_op_type_name(e.op_type)::text,
          wallet_operation_payload((SELECT b.ops -> e.block_seq::text FROM wallet_blocks b WHERE b.block_num = e.block_num),
                                   e.block_num, e.ts, e.op_in_trx, e.virtual_op, e.trx_id, e.op_type)::text
     FROM gaps g CROSS JOIN LATERAL (
            SELECT o.* FROM (VALUES (false), (true)) AS w(wide) CROSS JOIN LATERAL (SELECT * FROM wallet_events o
             WHERE o.account_id = (SELECT account_id FROM pos) AND o.wide = w.wide
               AND o.block_num > g.lo AND o.block_num <= g.hi
               AND (o.block_num, o.block_seq * 100 + o.role) < ((SELECT ub FROM pos), (SELECT uk FROM pos)) OFFSET 0) o
            UNION ALL
            SELECT o.* FROM wallet_balance_carried c CROSS JOIN LATERAL (SELECT * FROM wallet_events o
                      WHERE o.account_id = c.event_account_id AND o.wide IN (false, true) AND o.block_num = c.block_num
                        AND o.block_seq * 100 + o.role = c.block_seq * 100 + c.role) o
             WHERE c.account_id = (SELECT account_id FROM pos) AND c.block_num > g.lo AND c.block_num <= g.hi
               AND (c.block_num, c.block_seq * 100 + c.role) < ((SELECT ub FROM pos), (SELECT uk FROM pos))) e
$$;
REVOKE ALL ON FUNCTION wallet_block_times_refresh(integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION wallet_balance_history_page_rows(text, integer, integer, timestamptz, timestamptz, integer, smallint)
    TO wallet_api_reader;
