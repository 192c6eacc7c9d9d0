-- 0022: get_balances at a time (issue 28; docs/wallet-history-api.md,
-- get_balances).
-- get_balances at a time ($2): the rows of wallet_balance_rows and one more
-- (kind 3) that says where the time falls among the stored blocks. Only
-- blocks with events have a wallet_blocks row, so the chain's last block at
-- or before the time is not known when blocks without events follow the last
-- stored one; but the balances are: with A the last stored block at or
-- before the time and B the first after it, no block between them has an
-- event (once the store holds every block up to B - 1), so every balance
-- after any block of A .. B - 1 is the one after A. The rows are read at
-- B - 1 (at most indexed_block), so that the readiness checks cover every
-- block up to the chain's block at the time, and the answer names A.
-- Kind 3: n1 A (NULL: none), n2 its epoch, n3 indexed_block's time as
-- get_status answers it (the indexer's checkpoint time when indexed_block is
-- the checkpoint, else the last stored block's at or below it), n4 B (NULL:
-- none), n5 its epoch.
-- No SET clause, and wallet_balance_rows called on a column (LATERAL), not on
-- a sub-select: so PostgreSQL may inline both into the API's prepared
-- statement, as 0021 does for the other balance reads.
CREATE FUNCTION wallet_balance_rows_at_time(account text, at_time timestamptz, current_version smallint)
RETURNS TABLE (kind integer, n1 bigint, n2 bigint, n3 bigint, n4 bigint, n5 bigint, n6 bigint,
               t1 text, t2 text, t3 text, t4 text)
LANGUAGE sql STABLE AS $$
WITH st AS (SELECT s.indexed_block,
                   coalesce((SELECT c.block_time FROM indexer_checkpoint c WHERE c.block_num = s.indexed_block),
                            (SELECT b.ts FROM wallet_blocks b WHERE b.block_num <= s.indexed_block
                              ORDER BY b.block_num DESC LIMIT 1)) AS indexed_time
              FROM wallet_store_state s),
   at_or_before AS (SELECT b.block_num, b.ts FROM wallet_blocks b WHERE b.ts <= $2 ORDER BY b.ts DESC, b.block_num DESC LIMIT 1),
   after AS (SELECT b.block_num, b.ts FROM wallet_blocks b WHERE b.ts > $2 ORDER BY b.ts, b.block_num LIMIT 1),
   target AS (SELECT least(st.indexed_block, (SELECT block_num FROM after) - 1) AS at_block FROM st)
   SELECT r.* FROM target CROSS JOIN LATERAL wallet_balance_rows($1, target.at_block, $3) r
   UNION ALL SELECT 3, a.block_num::bigint, extract(epoch FROM a.ts)::bigint, extract(epoch FROM st.indexed_time)::bigint,
          n.block_num::bigint, extract(epoch FROM n.ts)::bigint, NULL, NULL, NULL, NULL, NULL
     FROM st LEFT JOIN at_or_before a ON true LEFT JOIN after n ON true
$$;
GRANT EXECUTE ON FUNCTION wallet_balance_rows_at_time(text, timestamptz, smallint) TO wallet_api_reader;
