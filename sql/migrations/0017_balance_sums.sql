-- 0017: balances from the history, read fast whatever order the store was
-- loaded in (issue 28; docs/store-layout.md, "Balances from the history").
--
-- Nothing is added to the event rows: an event's balance changes are a
-- function of its stored operation, its account and role (the decoder's
-- balance_changes). Balances are kept as snapshots of each account's whole
-- balance state (every component, and what the stateful changes need: the
-- delegations per pair, the savings withdrawals in flight), written by an
-- ordered pass (wallet/balance_snapshots.hpp) that advances over the
-- contiguous fully loaded, irreversible prefix of the chain one period of
-- CHAIN_BALANCE_SNAPSHOT_BLOCKS at a time: at the end of each period in which
-- an account's balances changed, its state after that period's last block.
-- A balance at block B is the account's last snapshot at or below B plus the
-- account's events after it up to B (at most one period's, below the pass).
CREATE TABLE wallet_balance_snapshots (
    account_id integer NOT NULL,
    block_num  integer NOT NULL,  -- the state after every event of blocks up to this one
    state      bytea   NOT NULL,  -- wallet::BalanceState::encode
    PRIMARY KEY (account_id, block_num)
);

-- The pass's checkpoint: every account's changes of blocks up to
-- through_block are in its snapshots (an account without a snapshot up to
-- there had no change). Advanced in the transaction of the snapshots it
-- covers: a pass killed mid-period redoes that period.
CREATE TABLE wallet_balance_snapshot_state (
    singleton     boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    through_block integer NOT NULL
);
INSERT INTO wallet_balance_snapshot_state (through_block) VALUES (0);

-- The events that carry a change of another account than their own (a
-- routed fill_vesting_withdraw's sender side), under the account the change
-- is of: get_balances reads an account's events after its snapshot by the
-- account, and these beside them. Rare.
CREATE TABLE wallet_balance_carried (
    account_id integer  NOT NULL,
    block_num  integer  NOT NULL,
    block_seq  integer  NOT NULL,
    role       smallint NOT NULL,
    event_account_id integer NOT NULL,  -- the event's own account
    PRIMARY KEY (account_id, block_num, block_seq, role)
);

GRANT SELECT ON wallet_balance_snapshots, wallet_balance_snapshot_state, wallet_balance_carried TO wallet_api_reader;
