-- 0006: which decoder version loaded each block range, and which blocks are
-- still loading (docs/operations.md, "Bringing a store up to date"). The
-- version is wallet::kDecoderVersion (common/include/wallet/decoder_version.hpp):
-- 1 for the releases up to schema version 5 (spec 000's 15 types), so every
-- range loaded before this migration is marked 1.

-- A shard's current pass stored blocks start_block..next_block - 1 with
-- decoder_version; blocks next_block..stored_through stay stored by an
-- earlier pass of the older stored_version. A pass of a newer decoder starts
-- the shard over (wallet-backfill re-runs shards an older decoder loaded),
-- so its blocks never count as missing meanwhile. The default is the version
-- of writers that predate this column.
ALTER TABLE backfill_shards
    ADD COLUMN decoder_version smallint NOT NULL DEFAULT 1,
    ADD COLUMN stored_through  integer,
    ADD COLUMN stored_version  smallint;

-- The blocks the indexer stored, by decoder version: disjoint, contiguous
-- ranges ending at the checkpoint (wallet_indexer_stored keeps them so).
CREATE TABLE indexer_ranges (
    first_block      integer   PRIMARY KEY,
    last_block       integer   NOT NULL CHECK (last_block >= first_block),
    decoder_version  smallint  NOT NULL
);

-- A populated store: the indexer's blocks, loaded by version 1. Where it
-- started is not recorded: above the highest shard below the checkpoint (an
-- uncovered gap between them counts as the indexer's, so that a re-run loads
-- it rather than missing it), else from the lowest stored block.
INSERT INTO indexer_ranges (first_block, last_block, decoder_version)
SELECT least(s.first_block, c.block_num), c.block_num, 1
  FROM indexer_checkpoint c,
       LATERAL (SELECT coalesce((SELECT max(end_block) + 1 FROM backfill_shards WHERE end_block < c.block_num),
                                (SELECT min(block_num) FROM wallet_blocks), c.block_num) AS first_block) s
 WHERE c.block_num > 0;

-- In the indexer's batch transaction: blocks from_block..to_block were
-- stored by `decoder` (to_block < from_block: a fork rewind to from_block - 1).
-- Ranges at or above from_block are cut off first (re-indexed or rewound).
CREATE FUNCTION wallet_indexer_stored(from_block integer, to_block integer, decoder smallint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM indexer_ranges WHERE first_block >= from_block;
    UPDATE indexer_ranges SET last_block = from_block - 1 WHERE last_block >= from_block;
    IF to_block >= from_block THEN
        UPDATE indexer_ranges SET last_block = to_block WHERE last_block = from_block - 1 AND decoder_version = decoder;
        IF NOT FOUND THEN
            INSERT INTO indexer_ranges (first_block, last_block, decoder_version) VALUES (from_block, to_block, decoder);
        END IF;
    END IF;
END $$;

-- The blocks of backfill shards not stored yet, by the shard nor by the
-- indexer: from each unfinished shard's first missing block to its end.
-- Reads the unfinished shards only (get_status and every page call it).
CREATE FUNCTION wallet_loading_shards() RETURNS TABLE (first_block integer, last_block integer, blocks bigint)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 10 AS $$
    WITH indexer AS (SELECT min(r.first_block) AS first_block, max(r.last_block) AS last_block FROM indexer_ranges r),
         missing AS (SELECT greatest(s.next_block, s.stored_through + 1) AS first_block, s.end_block AS last_block
                       FROM backfill_shards s WHERE s.state <> 'done')
    SELECT m.first_block, m.last_block,
           (m.last_block - m.first_block + 1)::bigint
           - CASE WHEN i.first_block IS NULL THEN 0
                  ELSE greatest(0, least(m.last_block, i.last_block) - greatest(m.first_block, i.first_block) + 1) END
      FROM missing m, indexer i
     WHERE m.first_block <= m.last_block
       AND NOT coalesce(m.first_block BETWEEN i.first_block AND i.last_block, false)
$$;

-- Spec 000's indexed_block, the last fully indexed block: the highest block
-- below which every block of the configured range (backfill shards and the
-- indexer's range) is stored; the checkpoint when nothing below it is
-- missing; NULL before the indexer's first batch.
-- SECURITY DEFINER (as this function's and get_status' below): the API's role
-- reads the answer, not backfill_shards (its owner tokens name hosts).
CREATE FUNCTION wallet_indexed_block() RETURNS integer
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    -- plpgsql keeps the plan for the session: 0.05 ms a call with 800 shards.
    RETURN (SELECT least(c.block_num, (SELECT min(l.first_block) - 1 FROM wallet_loading_shards() l))
              FROM indexer_checkpoint c);
END $$;

-- The lowest run of stored blocks whose decoder version (the highest of the
-- passes that stored a block) is below current_version; no row when every
-- stored block is current. One look at each table when the store is up to
-- date; else a sweep over the ranges of both (about 3 per shard).
CREATE FUNCTION wallet_outdated_range(current_version smallint) RETURNS TABLE (first_block integer, last_block integer)
LANGUAGE plpgsql STABLE ROWS 1 AS $$
DECLARE
    piece record;
    at_block integer;
    shard_version smallint;    -- of the shard range covering at_block
    indexer_version smallint;  -- of the indexer range covering at_block
    run_first integer;
    run_last integer;
BEGIN
    IF NOT EXISTS (SELECT FROM backfill_shards s
                    WHERE (s.decoder_version < current_version AND s.next_block > s.start_block)
                       OR (s.stored_version < current_version AND s.stored_through >= s.next_block))
       AND NOT EXISTS (SELECT FROM indexer_ranges r WHERE r.decoder_version < current_version) THEN
        RETURN;
    END IF;
    -- Shards never overlap each other, nor the indexer's ranges each other:
    -- at any block at most one range of each is open.
    FOR piece IN
        WITH ranges AS (
            SELECT true AS shard, s.start_block AS f, s.next_block - 1 AS l, s.decoder_version AS v
              FROM backfill_shards s WHERE s.next_block > s.start_block
            UNION ALL
            SELECT true, s.next_block, s.stored_through, s.stored_version
              FROM backfill_shards s WHERE s.stored_through >= s.next_block
            UNION ALL
            SELECT false, r.first_block, r.last_block, r.decoder_version FROM indexer_ranges r)
        SELECT shard, f AS boundary, v FROM ranges
        UNION ALL SELECT shard, l + 1, NULL FROM ranges
        ORDER BY boundary, v NULLS FIRST  -- a range ends before the next one starts at the same block
    LOOP
        IF at_block IS NOT NULL AND piece.boundary > at_block THEN
            -- Blocks at_block..piece.boundary - 1 have one version (NULL: not stored).
            IF greatest(shard_version, indexer_version) < current_version THEN
                run_first := coalesce(run_first, at_block);
                run_last := piece.boundary - 1;
            ELSIF run_first IS NOT NULL THEN
                EXIT;
            END IF;
        END IF;
        IF piece.shard THEN shard_version := piece.v; ELSE indexer_version := piece.v; END IF;
        at_block := piece.boundary;
    END LOOP;
    IF run_first IS NOT NULL THEN
        first_block := run_first;
        last_block := run_last;
        RETURN NEXT;
    END IF;
END $$;

-- get_status in one call: indexed_block and its time, what is still loading,
-- the lowest outdated run. The events' tables are read only while history
-- below the checkpoint is missing (the time of indexed_block); else get_status
-- answers even while they are locked.
CREATE FUNCTION wallet_store_status(current_version smallint,
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
    indexed_block := least(checkpoint_block, loading_from - 1);
    IF indexed_block < checkpoint_block THEN
        -- The time of the last stored block at or below it (blocks without events have no row).
        indexed_epoch := (SELECT extract(epoch FROM w.ts)::bigint FROM wallet_blocks w WHERE w.block_num <= indexed_block
                           ORDER BY w.block_num DESC LIMIT 1);
    END IF;
    SELECT o.first_block, o.last_block INTO outdated_from, outdated_to FROM wallet_outdated_range(current_version) o;
END $$;

REVOKE ALL ON FUNCTION wallet_indexer_stored(integer, integer, smallint) FROM PUBLIC;
