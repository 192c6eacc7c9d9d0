-- 0018: what get_balances needs beside the sums of 0017 (issue 28;
-- docs/store-layout.md, "Balances from the history"). Additive.

-- Events stored whose balance changes the decoder could not read: stored
-- like every event (a load never stops on one odd operation), their changes
-- left out of the sums, and listed here so that a balance they may move is
-- refused with the block named instead of answered wrong. The account is
-- the event's; decoder_version the decoder that could not read it.
CREATE TABLE wallet_balance_undecodable (
    account_id      integer  NOT NULL,
    block_num       integer  NOT NULL,
    block_seq       integer  NOT NULL,
    role            smallint NOT NULL,
    op_type         smallint NOT NULL,
    decoder_version smallint NOT NULL,
    problem         text     NOT NULL,
    PRIMARY KEY (block_num, block_seq, account_id, role)
);
CREATE INDEX wallet_balance_undecodable_account ON wallet_balance_undecodable (account_id, block_num);

-- get_balances reads an account's pending events (the ones it replays in
-- block order) by account.
CREATE INDEX wallet_balance_pending_account ON wallet_balance_pending (account_id, block_num);

-- What a balance at `at_block` depends on, for the API's role (which may
-- not read backfill_shards): the lowest block of the configured range (the
-- shards' and the indexer's), the first block still loading, the lowest
-- outdated run and wallet_balance_coverage's missing_through.
CREATE FUNCTION wallet_balance_readiness(current_version smallint,
    OUT first_block integer, OUT loading_from integer, OUT outdated_from integer, OUT outdated_to integer,
    OUT missing_through integer)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    first_block := least((SELECT min(s.start_block) FROM backfill_shards s), (SELECT min(r.first_block) FROM indexer_ranges r));
    loading_from := (SELECT min(m.first_block) FROM wallet_loading_shards() m);
    SELECT o.first_block, o.last_block INTO outdated_from, outdated_to FROM wallet_outdated_range(current_version) o;
    missing_through := (SELECT c.missing_through FROM wallet_balance_coverage c);
END $$;

GRANT SELECT ON wallet_balance_undecodable TO wallet_api_reader;
GRANT EXECUTE ON FUNCTION wallet_balance_readiness(smallint) TO wallet_api_reader;
