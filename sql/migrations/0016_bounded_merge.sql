-- 0016: the reorder's merge in bounded steps (issue 32). A merge rewrote a
-- month of blocks (about 19 million events on mainnet) in one transaction:
-- one burst of WAL that standbys replay behind every later commit. It now
-- rewrites the month's events a group of accounts per transaction, in
-- account order, so each transaction moves at most about max_rows events (a
-- group ends after the account that reaches the bound), and the end state is
-- the one-transaction merge's: the month's events sorted by the keyset,
-- written one account group after the other.
--
-- The merge in progress: blocks merged_through + 1 .. merge_last_block, its
-- accounts up to merge_account_through rewritten (NULL: none yet). A kill
-- rolls back the group in progress only; the next call goes on with the next
-- group of the same range, whatever max_blocks it is given.
ALTER TABLE wallet_reorder
    ADD COLUMN merge_last_block integer,
    ADD COLUMN merge_account_through integer;

-- The last account of each group of the merge in progress, planned when it
-- starts (one read of the range's account ids); empty when no merge is in
-- progress or it is one group.
CREATE TABLE wallet_reorder_merge_groups (
    last_account integer PRIMARY KEY
);

-- As 0010's, for the accounts after_account + 1 .. through_account of the
-- blocks (NULL: no bound on that side).
CREATE FUNCTION wallet_reorder_range(first_block integer, last_block integer, after_account integer,
    through_account integer) RETURNS bigint
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
    EXECUTE format('WITH moved AS (DELETE FROM wallet_events WHERE block_num BETWEEN $1 AND $2'
                   ' AND account_id > $3 AND account_id <= $4 RETURNING *)'
                   ' INSERT INTO wallet_events (%1$s) SELECT %1$s FROM moved'
                   ' ORDER BY account_id, wide, block_num, block_seq, role', columns)
        USING first_block, last_block, coalesce(after_account, -1), coalesce(through_account, 2147483647);
    GET DIAGNOSTICS moved = ROW_COUNT;
    RETURN moved;
END $$;

-- 0010's, every account.
CREATE OR REPLACE FUNCTION wallet_reorder_range(first_block integer, last_block integer) RETURNS bigint
LANGUAGE sql AS $$
    SELECT wallet_reorder_range(first_block, last_block, NULL, NULL)
$$;

-- As 0010's, with the merge bounded: with `merge` and max_rows, one group of
-- accounts of the merge in progress (or of the one it starts) per call;
-- without max_rows, the rest of the range at once. `complete`: the range is
-- merged (merged_through moved up); false while groups remain.
DROP FUNCTION wallet_reorder_step(integer, boolean);
CREATE FUNCTION wallet_reorder_step(max_blocks integer, merge boolean DEFAULT false, max_rows bigint DEFAULT NULL,
    OUT first_block integer, OUT last_block integer, OUT moved_rows bigint, OUT complete boolean)
LANGUAGE plpgsql AS $$
DECLARE
    ordered integer;
    merged integer;
    merging_through integer;
    after_account integer;
    through_account integer;
    bulk_through integer;
BEGIN
    IF max_blocks IS NULL OR max_blocks < 1 THEN
        RAISE EXCEPTION 'wallet_reorder_step: max_blocks must be at least 1';
    END IF;
    IF max_rows IS NOT NULL AND max_rows < 1 THEN
        RAISE EXCEPTION 'wallet_reorder_step: max_rows must be at least 1';
    END IF;
    -- One call at a time: a second caller waits here, then reads the new row.
    SELECT r.ordered_through, r.merged_through, r.merge_last_block, r.merge_account_through
      INTO ordered, merged, merging_through, after_account
      FROM wallet_reorder r FOR UPDATE;
    IF EXISTS (SELECT FROM wallet_bulk_load b WHERE b.state <> 'done') THEN
        RAISE EXCEPTION 'a bulk load is unfinished (wallet_bulk_load): finish it before reordering';
    END IF;
    -- A finished bulk load clustered the whole table: everything up to its
    -- last block counts as ordered and merged.
    bulk_through := coalesce((SELECT b.last_block FROM wallet_bulk_load b), 0);
    ordered := greatest(ordered, bulk_through);
    merged := greatest(merged, bulk_through);
    moved_rows := 0;
    complete := true;
    IF NOT merge THEN
        first_block := ordered + 1;
        last_block := least(ordered::bigint + max_blocks, wallet_reorder_limit());
        IF last_block < first_block THEN
            last_block := NULL;
            RETURN;
        END IF;
        moved_rows := wallet_reorder_range(first_block, last_block);
        UPDATE wallet_reorder r
           SET ordered_through = last_block, moved_rows = r.moved_rows + wallet_reorder_step.moved_rows,
               updated_at = now();
        RETURN;
    END IF;

    first_block := merged + 1;
    IF merging_through IS NOT NULL AND merging_through > merged THEN
        last_block := merging_through;
    ELSE
        -- A new merge, once its whole range is ordered: its groups planned.
        last_block := CASE WHEN merged::bigint + max_blocks <= ordered THEN merged + max_blocks END;
        IF last_block IS NULL THEN
            RETURN;
        END IF;
        after_account := NULL;
        DELETE FROM wallet_reorder_merge_groups;
        IF max_rows IS NOT NULL THEN
            -- An account ends a group when the events up to it reach the
            -- next multiple of max_rows.
            INSERT INTO wallet_reorder_merge_groups (last_account)
            SELECT max(c.account_id)
              FROM (SELECT n.account_id, sum(n.events) OVER (ORDER BY n.account_id) AS running
                      FROM (SELECT e.account_id, count(*) AS events FROM wallet_events e
                             WHERE e.block_num BETWEEN first_block AND last_block GROUP BY e.account_id) n) c
             GROUP BY (c.running::bigint - 1) / max_rows;
        END IF;
    END IF;
    -- The next group; the last one (or a merge without groups) takes every
    -- account left.
    through_account := (SELECT min(g.last_account) FROM wallet_reorder_merge_groups g
                         WHERE g.last_account > coalesce(after_account, -1));
    IF max_rows IS NULL
       OR through_account >= (SELECT max(g.last_account) FROM wallet_reorder_merge_groups g) THEN
        through_account := NULL;
    END IF;
    moved_rows := wallet_reorder_range(first_block, last_block, after_account, through_account);
    complete := through_account IS NULL;
    IF complete THEN
        DELETE FROM wallet_reorder_merge_groups;
    END IF;
    UPDATE wallet_reorder r
       SET merged_through = CASE WHEN complete THEN wallet_reorder_step.last_block ELSE r.merged_through END,
           merge_last_block = CASE WHEN complete THEN NULL ELSE wallet_reorder_step.last_block END,
           merge_account_through = CASE WHEN complete THEN NULL ELSE through_account END,
           moved_rows = r.moved_rows + wallet_reorder_step.moved_rows, updated_at = now();
END $$;

REVOKE ALL ON FUNCTION wallet_reorder_range(integer, integer, integer, integer),
    wallet_reorder_step(integer, boolean, bigint) FROM PUBLIC;
