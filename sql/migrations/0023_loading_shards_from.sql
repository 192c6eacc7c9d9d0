-- 0023: get_status's loading.shards_from (issue 30): the first block of the
-- backfill shard holding the first block still loading, so that the status
-- page shows the unfinished shards' span and the share of it stored (from
-- `from`, the first missing block, alone a lone shard shows no progress).
-- Additive: one function. SECURITY DEFINER as wallet_store_status: the API's
-- role reads the answer, not backfill_shards (its owner tokens name hosts).
-- Shards never overlap: the one holding a block is the one starting last at
-- or below it (the primary key's index, one row).
CREATE FUNCTION wallet_loading_shards_from() RETURNS integer
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT max(s.start_block) FROM backfill_shards s
     WHERE s.start_block <= (SELECT min(m.first_block) FROM wallet_loading_shards() m)
$$;
