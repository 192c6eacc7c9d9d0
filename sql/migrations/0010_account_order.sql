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

-- The state row, locked: one step or merge at a time (a second caller waits
-- here, then reads the new row). A finished bulk load clustered the whole
-- table: everything up to its last block counts as ordered and merged.
CREATE FUNCTION wallet_reorder_state(OUT ordered_through integer, OUT merged_through integer)
LANGUAGE plpgsql AS $$
DECLARE
    bulk_through integer;
BEGIN
    SELECT r.ordered_through, r.merged_through INTO ordered_through, merged_through FROM wallet_reorder r FOR UPDATE;
    IF EXISTS (SELECT FROM wallet_bulk_load b WHERE b.state <> 'done') THEN
        RAISE EXCEPTION 'a bulk load is unfinished (wallet_bulk_load): finish it before reordering';
    END IF;
    bulk_through := coalesce((SELECT b.last_block FROM wallet_bulk_load b), 0);
    ordered_through := greatest(ordered_through, bulk_through);
    merged_through := greatest(merged_through, bulk_through);
END $$;

-- One step, in the caller's transaction: blocks ordered_through + 1 .. (at
-- most max_blocks of them, at most wallet_reorder_limit()) rewritten in
-- account order, and ordered_through moved up. A kill rolls all of it back,
-- and the next step starts over at the same block. Returns the range and
-- the rows moved (nothing to do: last_block NULL).
CREATE FUNCTION wallet_reorder_step(max_blocks integer,
    OUT first_block integer, OUT last_block integer, OUT moved_rows bigint)
LANGUAGE plpgsql AS $$
DECLARE
    state record;
BEGIN
    IF max_blocks IS NULL OR max_blocks < 1 THEN
        RAISE EXCEPTION 'wallet_reorder_step: max_blocks must be at least 1';
    END IF;
    SELECT * INTO state FROM wallet_reorder_state();
    first_block := state.ordered_through + 1;
    last_block := least(state.ordered_through::bigint + max_blocks, wallet_reorder_limit());
    moved_rows := 0;
    IF last_block < first_block THEN
        last_block := NULL;
        RETURN;
    END IF;
    moved_rows := wallet_reorder_range(first_block, last_block);
    UPDATE wallet_reorder r
       SET ordered_through = last_block, moved_rows = r.moved_rows + wallet_reorder_step.moved_rows, updated_at = now();
END $$;

-- Ranges of steps merged into one: once merged_through + merge_blocks is
-- ordered, blocks merged_through + 1 .. merged_through + merge_blocks are
-- rewritten in account order as one range (an account with a few events a
-- day then finds a month of them on a few pages, not one page per day), and
-- merged_through moves up. Same transaction rules as a step.
CREATE FUNCTION wallet_reorder_merge(merge_blocks integer,
    OUT first_block integer, OUT last_block integer, OUT moved_rows bigint)
LANGUAGE plpgsql AS $$
DECLARE
    state record;
BEGIN
    IF merge_blocks IS NULL OR merge_blocks < 1 THEN
        RAISE EXCEPTION 'wallet_reorder_merge: merge_blocks must be at least 1';
    END IF;
    SELECT * INTO state FROM wallet_reorder_state();
    first_block := state.merged_through + 1;
    last_block := state.merged_through::bigint + merge_blocks;
    moved_rows := 0;
    IF last_block > state.ordered_through THEN
        last_block := NULL;
        RETURN;
    END IF;
    moved_rows := wallet_reorder_range(first_block, last_block);
    UPDATE wallet_reorder r
       SET merged_through = last_block, moved_rows = r.moved_rows + wallet_reorder_merge.moved_rows, updated_at = now();
END $$;

REVOKE ALL ON FUNCTION wallet_reorder_range(integer, integer), wallet_reorder_state(), wallet_reorder_step(integer),
    wallet_reorder_merge(integer) FROM PUBLIC;

-- The API's account lookup (name -> id, in every page and totals statement):
-- a hash index reads one bucket page (its metapage stays cached) and the
-- row, 2 buffers; the unique btree reads its root, inner pages and a leaf
-- first (3 to 4 buffers from 20,000 to millions of accounts). The btree stays:
-- it is the unique constraint the writers' ON CONFLICT (name) relies on.
CREATE INDEX wallet_accounts_name_hash ON wallet_accounts USING hash (name);
