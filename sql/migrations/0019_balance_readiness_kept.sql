-- 0019: get_balances' readiness read from wallet_store_state's one row
-- (issue 28). 0018's wallet_balance_readiness computed it per request from
-- backfill_shards and indexer_ranges (every shard, 11,000 at mainnet: most
-- of a read's cost). The writers now keep it in the row beside
-- indexed_block, by the same refresh and under the same lock (migration
-- 0014 says why the row is then exact under concurrent writers):
--   first_block     the lowest block of the configured range (the shards'
--                   and the indexer's ranges); NULL: none configured
--   loading_from    the first block still loading (wallet_loading_shards)
--   stored_version  the lowest decoder version of the stored ranges (the
--                   ranges wallet_outdated_range sweeps); NULL: none stored.
--                   A reader whose version is above it has an outdated run
--                   somewhere: only then is the run looked for.
ALTER TABLE wallet_store_state
    ADD COLUMN first_block    integer,
    ADD COLUMN loading_from   integer,
    ADD COLUMN stored_version smallint;

CREATE FUNCTION wallet_store_state_computed(OUT indexed_block integer, OUT first_block integer,
    OUT loading_from integer, OUT stored_version smallint)
LANGUAGE sql STABLE AS $$
    SELECT wallet_indexed_block_computed(),
           least((SELECT min(s.start_block) FROM backfill_shards s), (SELECT min(r.first_block) FROM indexer_ranges r)),
           (SELECT min(m.first_block) FROM wallet_loading_shards() m),
           -- wallet_outdated_range's ranges, each at its version.
           least((SELECT min(s.decoder_version) FROM backfill_shards s WHERE s.next_block > s.start_block),
                 (SELECT min(s.stored_version) FROM backfill_shards s WHERE s.stored_through >= s.next_block),
                 (SELECT min(r.decoder_version) FROM indexer_ranges r))
$$;

-- As in 0014, with every column: lock, then compute in a new statement.
CREATE OR REPLACE FUNCTION wallet_store_state_refresh() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    computed record;
BEGIN
    PERFORM FROM wallet_store_state FOR UPDATE;
    SELECT * INTO computed FROM wallet_store_state_computed();
    UPDATE wallet_store_state s
       SET indexed_block = computed.indexed_block, first_block = computed.first_block,
           loading_from = computed.loading_from, stored_version = computed.stored_version
     WHERE (s.indexed_block, s.first_block, s.loading_from, s.stored_version)
           IS DISTINCT FROM (computed.indexed_block, computed.first_block, computed.loading_from, computed.stored_version);
END $$;

-- The update triggers of 0014 fire on the versions too (a re-backfill by a
-- newer decoder raises them; a test may lower them).
DROP TRIGGER wallet_store_state_ranges_update ON indexer_ranges;
CREATE CONSTRAINT TRIGGER wallet_store_state_ranges_update AFTER UPDATE ON indexer_ranges
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.first_block IS DISTINCT FROM NEW.first_block OR OLD.last_block IS DISTINCT FROM NEW.last_block
          OR OLD.decoder_version IS DISTINCT FROM NEW.decoder_version)
    EXECUTE FUNCTION wallet_store_state_refresh_trigger();

DROP TRIGGER wallet_store_state_shards_update ON backfill_shards;
CREATE CONSTRAINT TRIGGER wallet_store_state_shards_update AFTER UPDATE ON backfill_shards
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.start_block IS DISTINCT FROM NEW.start_block OR OLD.end_block IS DISTINCT FROM NEW.end_block
          OR OLD.next_block IS DISTINCT FROM NEW.next_block OR OLD.stored_through IS DISTINCT FROM NEW.stored_through
          OR (OLD.state = 'done') IS DISTINCT FROM (NEW.state = 'done')
          OR OLD.decoder_version IS DISTINCT FROM NEW.decoder_version
          OR OLD.stored_version IS DISTINCT FROM NEW.stored_version)
    EXECUTE FUNCTION wallet_store_state_refresh_trigger();

-- The same answer as 0018's, from the row (one buffer) and the snapshot
-- pass's checkpoint (one buffer); the outdated run is swept only when some
-- stored range is below the reader's version.
CREATE OR REPLACE FUNCTION wallet_balance_readiness(current_version smallint,
    OUT first_block integer, OUT loading_from integer, OUT outdated_from integer, OUT outdated_to integer,
    OUT snapshots_through integer)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    lowest_version smallint;
BEGIN
    SELECT s.first_block, s.loading_from, s.stored_version INTO first_block, loading_from, lowest_version
      FROM wallet_store_state s;
    IF lowest_version < current_version THEN
        SELECT o.first_block, o.last_block INTO outdated_from, outdated_to FROM wallet_outdated_range(current_version) o;
    END IF;
    snapshots_through := (SELECT c.through_block FROM wallet_balance_snapshot_state c);
END $$;

-- A store of the previous version: set the new columns now.
SELECT wallet_store_state_refresh();

REVOKE ALL ON FUNCTION wallet_store_state_computed() FROM PUBLIC;
