-- 0001: the wallet event store, the indexer's state, backfill shards, and the
-- reader role's privileges. Applied by wallet_writer, which owns the schema.

-- One row per account and role per wallet-relevant operation (spec 000, Events;
-- decisions.md sections 1 and 2). The primary key is the dedup key: positional,
-- because virtual operations have no transaction id of their own.
CREATE TABLE wallet_operation_events (
    block_num       integer       NOT NULL CHECK (block_num > 0),
    trx_in_block    bigint        NOT NULL CHECK (trx_in_block BETWEEN 0 AND 4294967295),
    op_in_trx       integer       NOT NULL CHECK (op_in_trx >= 0),
    virtual_op      integer       NOT NULL CHECK (virtual_op >= 0),
    account         text          NOT NULL,
    role            text          NOT NULL CHECK (role IN ('sender', 'receiver', 'delegator', 'delegatee',
                                                          'author', 'curator', 'owner', 'beneficiary')),
    block_seq       integer       NOT NULL CHECK (block_seq >= 0),
    op_type         text          NOT NULL,
    trx_id          text,
    "timestamp"     timestamptz   NOT NULL,
    amount          numeric(30,6),
    symbol          text,
    vesting_amount  numeric(30,6),
    vesting_symbol  text,
    counterparty    text,
    memo            text,
    author          text,
    permlink        text,
    assets          jsonb         NOT NULL,
    payload         jsonb         NOT NULL,
    CONSTRAINT wallet_operation_events_dedup
        PRIMARY KEY (block_num, trx_in_block, op_in_trx, virtual_op, account, role)
);

-- Newest-first keyset paging per account on (timestamp, block_num, block_seq);
-- role breaks the tie when one account holds two roles of one operation.
CREATE INDEX wallet_events_account_keyset
    ON wallet_operation_events (account, "timestamp" DESC, block_num DESC, block_seq DESC, role DESC);

-- Listings and sums per account and op type over time (reward screens,
-- op_types filters); the included amounts let sums run as index-only scans.
CREATE INDEX wallet_events_account_type_keyset
    ON wallet_operation_events (account, op_type, "timestamp" DESC, block_num DESC, block_seq DESC, role DESC)
    INCLUDE (vesting_amount, amount);

-- The indexer's checkpoint: the last block whose events are fully stored.
CREATE TABLE indexer_checkpoint (
    singleton   boolean      PRIMARY KEY DEFAULT true CHECK (singleton),
    block_num   integer      NOT NULL,
    block_id    text         NOT NULL,
    block_time  timestamptz  NOT NULL,
    updated_at  timestamptz  NOT NULL DEFAULT now()
);

-- Ids of recently indexed blocks, compared with the node's to detect forks.
CREATE TABLE indexer_block_ids (
    block_num   integer      PRIMARY KEY,
    block_id    text         NOT NULL,
    block_time  timestamptz  NOT NULL
);

-- The indexer's latest observation of the node, read by get_status so that
-- the API never calls the node itself.
CREATE TABLE node_observation (
    singleton            boolean      PRIMARY KEY DEFAULT true CHECK (singleton),
    head_block           integer      NOT NULL,
    head_block_time      timestamptz  NOT NULL,
    last_irreversible    integer,
    observed_at          timestamptz  NOT NULL
);

-- Backfill shards: [start_block, end_block] inclusive. A worker claims a
-- pending shard, or a running one whose heartbeat is older than the timeout.
CREATE TABLE backfill_shards (
    start_block   integer      PRIMARY KEY,
    end_block     integer      NOT NULL CHECK (end_block >= start_block),
    state         text         NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'running', 'done')),
    owner         text,
    heartbeat_at  timestamptz,
    attempts      integer      NOT NULL DEFAULT 0,
    next_block    integer      NOT NULL,
    rows_written  bigint       NOT NULL DEFAULT 0,
    started_at    timestamptz,
    finished_at   timestamptz
);
CREATE INDEX backfill_shards_claimable ON backfill_shards (state, heartbeat_at) WHERE state <> 'done';

-- The API reads; it never writes.
GRANT SELECT ON wallet_operation_events, indexer_checkpoint, indexer_block_ids, node_observation
    TO wallet_api_reader;
