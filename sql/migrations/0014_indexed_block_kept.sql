-- 0014: the writers keep wallet_store_state.indexed_block (migration 0013)
-- equal to spec 000's last fully indexed block, and wallet_indexed_block()
-- reads that row: a page reads one buffer for it instead of two or three
-- (the indexer's checkpoint, the loading shards' index and, while shards
-- load, the indexer's ranges).

-- The computation itself, unchanged (migration 0006), under a new name: the
-- triggers below call it, and tests compare the row with it.
ALTER FUNCTION wallet_indexed_block() RENAME TO wallet_indexed_block_computed;

-- The row set to the computed value, in the writer's transaction.
--
-- Why the row is exact when the indexer and several backfill workers commit
-- concurrently (READ COMMITTED): a value computed from a snapshot taken
-- before another writer committed would miss that writer's change (one
-- UPDATE ... SET indexed_block = computed() is such a case: its snapshot is
-- taken before it waits for the row). So the row is locked first, and the
-- value computed by a new statement: this function is VOLATILE, so each of
-- its statements takes a new snapshot, which sees every writer that
-- committed before the lock was granted, and this transaction's own writes.
-- A writer commits its changes to the three tables only after its last
-- refresh (the triggers fire at the end of the statement, or at commit for
-- the deferred ones), and holds the lock until it commits; a waiting writer
-- is granted the lock only once that commit is visible. So the writer
-- that takes the lock last saw every other writer's changes and its own:
-- the committed row is always the value computed from the committed tables.
--
-- Locks: the row is taken last in every writer's transaction (the deferred
-- triggers fire at commit; the statement triggers fire on the last
-- statements of the indexer's batch and of the shard planner), and nothing
-- else is locked after it: no deadlock, and the lock lasts until the commit
-- only. The row is written only when the value changes (it stays one heap
-- page: no dead versions from batches that change nothing).
CREATE FUNCTION wallet_store_state_refresh() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    computed integer;
BEGIN
    PERFORM FROM wallet_store_state FOR UPDATE;
    SELECT wallet_indexed_block_computed() INTO computed;
    UPDATE wallet_store_state SET indexed_block = computed WHERE indexed_block IS DISTINCT FROM computed;
END $$;

CREATE FUNCTION wallet_store_state_refresh_trigger() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM wallet_store_state_refresh();
    RETURN NULL;
END $$;

-- Every write to the three tables the value is computed from. Statements
-- that write many rows (the planner registers every shard of a range in one
-- INSERT: 11,000 for mainnet) refresh once, at the end of the statement;
-- updates refresh at commit, once per changed row (a batch changes one
-- shard, or the checkpoint and one or two ranges), and only when a column
-- the value depends on changed: heartbeats, and the claims and releases
-- that keep a shard's progress, leave the row unlocked.
CREATE TRIGGER wallet_store_state_checkpoint AFTER INSERT OR DELETE OR TRUNCATE ON indexer_checkpoint
    FOR EACH STATEMENT EXECUTE FUNCTION wallet_store_state_refresh_trigger();
CREATE CONSTRAINT TRIGGER wallet_store_state_checkpoint_update AFTER UPDATE ON indexer_checkpoint
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.block_num IS DISTINCT FROM NEW.block_num)
    EXECUTE FUNCTION wallet_store_state_refresh_trigger();

CREATE TRIGGER wallet_store_state_ranges AFTER INSERT OR DELETE OR TRUNCATE ON indexer_ranges
    FOR EACH STATEMENT EXECUTE FUNCTION wallet_store_state_refresh_trigger();
CREATE CONSTRAINT TRIGGER wallet_store_state_ranges_update AFTER UPDATE ON indexer_ranges
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.first_block IS DISTINCT FROM NEW.first_block OR OLD.last_block IS DISTINCT FROM NEW.last_block)
    EXECUTE FUNCTION wallet_store_state_refresh_trigger();

CREATE TRIGGER wallet_store_state_shards AFTER INSERT OR DELETE OR TRUNCATE ON backfill_shards
    FOR EACH STATEMENT EXECUTE FUNCTION wallet_store_state_refresh_trigger();
CREATE CONSTRAINT TRIGGER wallet_store_state_shards_update AFTER UPDATE ON backfill_shards
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.start_block IS DISTINCT FROM NEW.start_block OR OLD.end_block IS DISTINCT FROM NEW.end_block
          OR OLD.next_block IS DISTINCT FROM NEW.next_block OR OLD.stored_through IS DISTINCT FROM NEW.stored_through
          OR (OLD.state = 'done') IS DISTINCT FROM (NEW.state = 'done'))
    EXECUTE FUNCTION wallet_store_state_refresh_trigger();

-- What a page, get_status and wallet_reorder_limit() read: the row, one
-- buffer. The API's role may read the row: no SECURITY DEFINER.
CREATE FUNCTION wallet_indexed_block() RETURNS integer
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT s.indexed_block FROM wallet_store_state s
$$;

-- get_status as in migration 0006, with indexed_block from the row: the
-- pages' number by construction (0006 computed least(checkpoint, first
-- missing block - 1), which without a checkpoint answered the loading
-- shards' block where the pages answered NULL). The loading blocks and the
-- outdated run are still computed (get_status only).
CREATE OR REPLACE FUNCTION wallet_store_status(current_version smallint,
    OUT indexed_block integer, OUT indexed_epoch bigint, OUT loading_from integer, OUT loading_to integer,
    OUT loading_blocks bigint, OUT outdated_from integer, OUT outdated_to integer)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    checkpoint_block integer;
BEGIN
    SELECT c.block_num, extract(epoch FROM c.block_time)::bigint INTO checkpoint_block, indexed_epoch
      FROM indexer_checkpoint c;
    SELECT min(m.first_block), max(m.last_block), sum(m.blocks)::bigint INTO loading_from, loading_to, loading_blocks
      FROM wallet_loading_shards() m;
    indexed_block := wallet_indexed_block();
    IF indexed_block < checkpoint_block THEN
        -- The time of the last stored block at or below it (blocks without events have no row).
        indexed_epoch := (SELECT extract(epoch FROM w.ts)::bigint FROM wallet_blocks w WHERE w.block_num <= indexed_block
                           ORDER BY w.block_num DESC LIMIT 1);
    END IF;
    SELECT o.first_block, o.last_block INTO outdated_from, outdated_to FROM wallet_outdated_range(current_version) o;
END $$;

-- A store of the previous version: its writers did not keep the row (0013
-- set it once). Set it now, by the same steps as a writer.
SELECT wallet_store_state_refresh();

REVOKE ALL ON FUNCTION wallet_store_state_refresh() FROM PUBLIC;
