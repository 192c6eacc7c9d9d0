-- 0017: balances from the history, stored so that order does not matter
-- (issue 28; docs/store-layout.md, "Balances from the history").
--
-- Nothing is added to the event rows: an event's balance changes are a
-- function of its stored operation, its account and role (the decoder's
-- balance_changes), so the writers compute them from exactly the rows they
-- insert (or, rewinding a fork, delete) and keep sums of them here, in the
-- same transaction as the rows.
--
-- Per account, UTC day and component, the sum of the day's `add` changes
-- (day: days since 2016-01-01, before the chain's first block, which a
-- smallint holds until 2105; component: wallet::BalanceComponent's number;
-- units: the sum in the component's smallest unit, 0.001 HIVE/HBD, 0.000001
-- VESTS, 1 for counts). Sums commute: backfill shards in any order, beside
-- the indexer, give the same rows; a row stored twice is inserted once (ON
-- CONFLICT DO NOTHING) and adds once. 40-byte rows and an 8-byte key: the
-- issue's budget is 32 bytes per event in all.
CREATE TABLE wallet_balance_daily (
    account_id integer  NOT NULL,
    day        smallint NOT NULL,
    component  smallint NOT NULL,
    units      bigint   NOT NULL,
    PRIMARY KEY (account_id, day, component)
);

-- The events whose changes are not plain sums (a `set`, or a kind that needs
-- the state before it: a delegation's previous amount, a cancelled savings
-- withdrawal's amount, a power-down's counters), which a shard loaded out of
-- order cannot apply: kept by their event key, to be applied in block order
-- where everything below is loaded, under the account the change is of
-- (with the event's block_num, block_seq and role), together with the
-- transfer_from_savings that a cancel needs the amount of. A few per cent of
-- events.
CREATE TABLE wallet_balance_pending (
    account_id integer  NOT NULL,
    block_num  integer  NOT NULL,
    block_seq  integer  NOT NULL,
    role       smallint NOT NULL,
    PRIMARY KEY (block_num, block_seq, account_id, role)
);

-- Events stored before this migration have no sums: the sums cover the
-- store only above `missing_through` (NULL: every event). A store upgraded
-- with events needs its sums rebuilt before it may answer a balance.
CREATE TABLE wallet_balance_coverage (
    singleton       boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    missing_through integer
);
INSERT INTO wallet_balance_coverage (missing_through) SELECT max(block_num) FROM wallet_events;

GRANT SELECT ON wallet_balance_daily, wallet_balance_pending, wallet_balance_coverage TO wallet_api_reader;
