-- 0011: the API's page statements call wallet_assets_triples (0009) and
-- wallet_trx_id_text (0007) on every row. PostgreSQL inlines an SQL function
-- into the calling query only when its body is no more volatile than the
-- function says it is, and, for a STRICT function, only when the body is
-- strict too. format() is STABLE, and a CASE is not strict: both functions
-- ran through the SQL function executor once per row (about 0.9 and 0.35 us;
-- 0.2 and 0.04 inlined), which made a 50-event page about a third slower in
-- PostgreSQL. `t/integration/api_plan_test.cpp` keeps every per-row function
-- of the page statements inlined.
-- STABLE is what wallet_assets_triples is (nothing indexes or generates a
-- column from it); wallet_trx_id_text of NULL is NULL either way.
ALTER FUNCTION wallet_assets_triples(text) STABLE;
ALTER FUNCTION wallet_trx_id_text(bytea) CALLED ON NULL INPUT;
