-- 0005: the state of a bulk load (`wallet-backfill --bulk`, backfill/README.md).
-- A bulk load fills a fresh store without per-row index and aggregate
-- maintenance: on entering it, wallet_events' indexes are dropped (their
-- definitions kept here) and the reward triggers disabled (their names kept
-- here); once every shard of the range is loaded, the indexes are built
-- again, the table rewritten in account order, the sums rebuilt set-based
-- and the triggers enabled, one step per transaction (build_step counts the
-- steps committed), so that a re-run after a kill at any point finishes the job.
-- While the row says anything but 'done', the indexer and the normal backfill
-- refuse to start: the store has no unique key to deduplicate against.
CREATE TABLE wallet_bulk_load (
    singleton          boolean      PRIMARY KEY DEFAULT true CHECK (singleton),
    state              text         NOT NULL CHECK (state IN ('loading', 'building', 'done')),
    first_block        integer      NOT NULL,
    last_block         integer      NOT NULL,
    -- wallet_events' indexes as they were, unique ones first (the first is
    -- the one the table is clustered on): names and pg_get_indexdef().
    index_names        text[]       NOT NULL,
    index_definitions  text[]       NOT NULL,
    disabled_triggers  text[]       NOT NULL,
    build_step         integer      NOT NULL DEFAULT 0,
    started_at         timestamptz  NOT NULL DEFAULT now(),
    updated_at         timestamptz  NOT NULL DEFAULT now(),
    finished_at        timestamptz
);
