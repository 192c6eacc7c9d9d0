-- 0013: one row that a page reads in one buffer (a sequential scan of a
-- one-page table; an index lookup would read two).
--   generation     a random number drawn when the store is created. Account
--                  ids are never reassigned within a store (the dictionary
--                  only grows), so a reader that remembers ids by name keeps
--                  them as long as the generation it saw with them is the
--                  row's: another store (recreated, or a different database
--                  behind the same name) has another generation.
--   indexed_block  spec 000's last fully indexed block, kept by the writers
--                  (what wallet_indexed_block() computes from the checkpoint,
--                  the indexer's ranges and the loading shards) so that a
--                  page does not read those three tables.
CREATE TABLE wallet_store_state (
    singleton     boolean  PRIMARY KEY DEFAULT true CHECK (singleton),
    generation    bigint   NOT NULL,
    indexed_block integer
);

-- Drawn from two random() calls: 62 bits, never 0 (a reader's "none yet").
INSERT INTO wallet_store_state (generation, indexed_block)
VALUES (((random() * 2147483647)::bigint << 31 | (random() * 2147483647)::bigint) + 1, wallet_indexed_block());

GRANT SELECT ON wallet_store_state TO wallet_api_reader;
