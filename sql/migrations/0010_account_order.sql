-- 0010: per-account locality of the irreversible history (docs/store-layout.md,
-- "Locality"). Writers append wallet_events in block order, so one account's
-- page of the live tail is spread over about one heap page per event. Once
-- blocks are irreversible, `wallet-reorder` (a step at a time, from a timer)
-- rewrites each range of them in account order: the rows of one account and
-- range then share a few heap pages, as after the bulk load's CLUSTER.

-- Everything up to ordered_through is in account order (per range of at most
-- one step's blocks), and up to merged_through per range of one merge's
-- blocks; the next step and merge start above them. One row.
CREATE TABLE wallet_reorder (
    singleton        boolean      PRIMARY KEY DEFAULT true CHECK (singleton),
    ordered_through  integer      NOT NULL CHECK (ordered_through >= 0),
    merged_through   integer      NOT NULL DEFAULT 0 CHECK (merged_through >= 0),
    moved_rows       bigint       NOT NULL DEFAULT 0,
    updated_at       timestamptz  NOT NULL DEFAULT now()
);
INSERT INTO wallet_reorder (ordered_through) VALUES (0);

-- The highest block below which every block is stored and irreversible:
-- stored as far as get_status' indexed_block says (for a store only the
-- backfill wrote: below its first missing block, else its last shard's end),
-- and at or below the last irreversible block the indexer saw the node report.
-- Without an observation of the node nothing is known to be irreversible: 0.
CREATE FUNCTION wallet_reorder_limit() RETURNS integer
LANGUAGE sql STABLE AS $$
    SELECT greatest(0, least(
        coalesce(wallet_indexed_block(),
                 (SELECT min(l.first_block) - 1 FROM wallet_loading_shards() l),
                 (SELECT max(s.end_block) FROM backfill_shards s), 0),
        coalesce((SELECT n.last_irreversible FROM node_observation n), 0)))
$$;

-- The events of blocks first_block..last_block deleted and inserted again
-- sorted by the keyset (account first), in the caller's transaction; the
-- rows moved. Readers see the range before or after (MVCC). The reward
-- sums' statement triggers take the rows off and add them back: the sums end
-- unchanged. The unique keyset accepts a key this transaction deleted.
CREATE FUNCTION wallet_reorder_range(first_block integer, last_block integer) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    columns text;
    moved bigint;
BEGIN
    -- Every stored column (generated ones are computed again), whatever the
    -- migrations after this one add.
    SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO columns
      FROM pg_attribute a
     WHERE a.attrelid = 'wallet_events'::regclass AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '';
    EXECUTE format('WITH moved AS (DELETE FROM wallet_events WHERE block_num BETWEEN $1 AND $2 RETURNING *)'
                   ' INSERT INTO wallet_events (%1$s) SELECT %1$s FROM moved'
                   ' ORDER BY account_id, wide, block_num, block_seq, role', columns)
        USING first_block, last_block;
    GET DIAGNOSTICS moved = ROW_COUNT;
    RETURN moved;
END $$;

-- One step, in the caller's transaction: blocks ordered_through + 1 .. (at
-- most max_blocks of them, at most wallet_reorder_limit()) rewritten in
-- account order, and ordered_through moved up. With `merge`, ranges of steps
-- merged into one: once merged_through + max_blocks is ordered, blocks
-- merged_through + 1 .. merged_through + max_blocks are rewritten as one
-- range (an account with a few events a day then finds a month of them on a
-- few pages, not one page per day), and merged_through moves up. A kill rolls
-- all of it back, and the next call starts over at the same block. Returns
-- the range and the rows moved (nothing to do: last_block NULL).
CREATE FUNCTION wallet_reorder_step(max_blocks integer, merge boolean DEFAULT false,
    OUT first_block integer, OUT last_block integer, OUT moved_rows bigint)
LANGUAGE plpgsql AS $$
DECLARE
    ordered integer;
    merged integer;
    bulk_through integer;
BEGIN
    IF max_blocks IS NULL OR max_blocks < 1 THEN
        RAISE EXCEPTION 'wallet_reorder_step: max_blocks must be at least 1';
    END IF;
    -- One call at a time: a second caller waits here, then reads the new row.
    SELECT r.ordered_through, r.merged_through INTO ordered, merged FROM wallet_reorder r FOR UPDATE;
    IF EXISTS (SELECT FROM wallet_bulk_load b WHERE b.state <> 'done') THEN
        RAISE EXCEPTION 'a bulk load is unfinished (wallet_bulk_load): finish it before reordering';
    END IF;
    -- A finished bulk load clustered the whole table: everything up to its
    -- last block counts as ordered and merged.
    bulk_through := coalesce((SELECT b.last_block FROM wallet_bulk_load b), 0);
    ordered := greatest(ordered, bulk_through);
    merged := greatest(merged, bulk_through);
    IF merge THEN
        first_block := merged + 1;
        last_block := CASE WHEN merged::bigint + max_blocks <= ordered THEN merged + max_blocks END;
    ELSE
        first_block := ordered + 1;
        last_block := least(ordered::bigint + max_blocks, wallet_reorder_limit());
        IF last_block < first_block THEN
            last_block := NULL;
        END IF;
    END IF;
    moved_rows := 0;
    IF last_block IS NULL THEN
        RETURN;
    END IF;
    moved_rows := wallet_reorder_range(first_block, last_block);
    UPDATE wallet_reorder r
       SET ordered_through = CASE WHEN merge THEN r.ordered_through ELSE last_block END,
           merged_through = CASE WHEN merge THEN last_block ELSE r.merged_through END,
           moved_rows = r.moved_rows + wallet_reorder_step.moved_rows, updated_at = now();
END $$;

REVOKE ALL ON FUNCTION wallet_reorder_range(integer, integer), wallet_reorder_step(integer, boolean) FROM PUBLIC;

-- The API's account lookup (name -> id, in every page and totals statement):
-- a hash index reads one bucket page (its metapage stays cached) and the
-- row, 2 buffers; the unique btree reads its root, inner pages and a leaf
-- first (3 to 4 buffers from 20,000 to millions of accounts). The btree stays:
-- it is the unique constraint the writers' ON CONFLICT (name) relies on.
CREATE INDEX wallet_accounts_name_hash ON wallet_accounts USING hash (name);
