-- 0007: narrower index entries and transaction ids (docs/store-layout.md,
-- "Measured"). In place, one transaction: the table is rewritten once (the
-- trx_id type) and both keyset indexes are built sorted afterwards.
--
-- Index entries. A btree entry is an 8-byte header plus its key, padded to 8
-- bytes. (account_id, wide, block_num, block_seq, role) is 4+1+3 (padding
-- before block_num)+4+4+2 = 18 bytes of key: 32 bytes an entry, the same for
-- the type keyset. Folding role into block_seq (block_seq * 100 + role: roles
-- are codes below 100, block_seq stays below 21,474,836 so the product fits
-- an integer) leaves 16 bytes of key: 24 an entry, 8 bytes less per event in
-- each index. The order and the uniqueness are the same: for 0 <= role < 100,
-- (block_seq, role) < (s, r) exactly when block_seq * 100 + role < s * 100 + r.
-- A block holds far fewer operations than 21 million: hived caps a block at
-- 2 MB (HIVE_MAX_BLOCK_SIZE), and a block's virtual operations number in the
-- thousands at most (payout and hardfork blocks).
--
-- Fill: the history below the live tail is never updated, so the indexes
-- are built full (fillfactor 100 instead of btree's 90); the tail's inserts
-- split pages as they would at 90, only sooner.
--
-- trx_id: 40 hex digits as text took 41 bytes; the 20 bytes they spell take
-- 21. wallet_trx_id_text() gives the text back exactly: a stored value of 20
-- bytes is the hex of a 40-digit lowercase id; any other text (test data,
-- hand-written rows) is stored as its own UTF-8 bytes, with a NUL byte
-- appended when those are exactly 20 (text never holds NUL), so no value is
-- ever read back differently.

DO $$
BEGIN
    IF EXISTS (SELECT FROM wallet_bulk_load WHERE state <> 'done') THEN
        RAISE EXCEPTION 'a bulk load is unfinished: finish it (wallet-backfill --bulk of the release that started it) before this upgrade';
    END IF;
END $$;

CREATE FUNCTION wallet_trx_id_bytes(trx_id text) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN trx_id ~ '^[0-9a-f]{40}$' THEN decode(trx_id, 'hex')
                WHEN octet_length(trx_id) = 20 THEN convert_to(trx_id, 'UTF8') || '\x00'::bytea
                ELSE convert_to(trx_id, 'UTF8') END
$$;
CREATE FUNCTION wallet_trx_id_text(trx_id bytea) RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN octet_length(trx_id) = 20 THEN encode(trx_id, 'hex')
                WHEN octet_length(trx_id) = 21 AND get_byte(trx_id, 20) = 0
                THEN convert_from(substring(trx_id FROM 1 FOR 20), 'UTF8')
                ELSE convert_from(trx_id, 'UTF8') END
$$;

-- The view reads trx_id: it goes while the column changes type.
DROP VIEW wallet_operation_events;
DROP INDEX wallet_events_keyset, wallet_events_type_keyset;

ALTER TABLE wallet_events
    ALTER COLUMN trx_id TYPE bytea USING wallet_trx_id_bytes(trx_id),
    ADD CONSTRAINT wallet_events_role_code CHECK (role >= 0 AND role < 100),
    ADD CONSTRAINT wallet_events_block_seq_range CHECK (block_seq < 21474836);

-- As 0004's, with (block_seq, role) folded into one integer (above).
CREATE UNIQUE INDEX wallet_events_keyset ON wallet_events (account_id, wide, block_num, (block_seq * 100 + role))
    WITH (fillfactor = 100);
CREATE INDEX wallet_events_type_keyset ON wallet_events (account_id, op_type, block_num, (block_seq * 100 + role))
    WITH (fillfactor = 100);

-- ---- the table of 0001, as a view (as 0004's, trx_id as text) ---------------------
CREATE VIEW wallet_operation_events AS
SELECT e.block_num,
       (o.entry ->> 0)::bigint AS trx_in_block,
       e.op_in_trx, e.virtual_op, a.name AS account, wallet_role_name(e.role) AS role,
       e.block_seq, wallet_op_type_name(e.op_type) AS op_type, wallet_trx_id_text(e.trx_id) AS trx_id,
       e.ts AS "timestamp", e.amount, e.symbol, e.vesting_amount, e.vesting_symbol, e.counterparty, e.memo,
       e.author, e.permlink,
       coalesce(wallet_assets_json(e.assets), wallet_derived_assets(e.op_type, e.amount, e.symbol, e.vesting_amount, e.vesting_symbol)) AS assets,
       (o.entry -> 1)::jsonb AS payload
  FROM wallet_events e
  JOIN wallet_accounts a ON a.id = e.account_id
  LEFT JOIN (SELECT b.block_num, o.block_seq, o.entry
               FROM wallet_blocks b CROSS JOIN LATERAL wallet_block_entries(b.ops) AS o) o
         ON o.block_num = e.block_num AND o.block_seq = e.block_seq;

CREATE OR REPLACE FUNCTION wallet_operation_events_write() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    account_id integer;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM wallet_events e USING wallet_accounts a
         WHERE a.name = OLD.account AND e.account_id = a.id AND e.block_num = OLD.block_num
           AND e.block_seq = OLD.block_seq AND e.role = wallet_role_code(OLD.role);
        IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
    END IF;
    INSERT INTO wallet_accounts (name) VALUES (NEW.account) ON CONFLICT (name) DO NOTHING;
    SELECT id INTO account_id FROM wallet_accounts WHERE name = NEW.account;
    INSERT INTO wallet_blocks AS b (block_num, ts, ops)
    VALUES (NEW.block_num, NEW."timestamp",
            json_build_object(NEW.block_seq, json_build_array(NEW.trx_in_block, NEW.payload)))
    ON CONFLICT (block_num) DO UPDATE
       SET ops = (b.ops::jsonb || jsonb_build_object(NEW.block_seq, jsonb_build_array(NEW.trx_in_block, NEW.payload)))::json
     WHERE b.ops -> NEW.block_seq::text IS NULL;
    INSERT INTO wallet_events (ts, account_id, block_num, block_seq, virtual_op, op_in_trx, op_type, role, amount,
                               symbol, vesting_amount, vesting_symbol, trx_id, counterparty, memo, author, permlink,
                               assets)
    VALUES (NEW."timestamp", account_id, NEW.block_num, NEW.block_seq, NEW.virtual_op, NEW.op_in_trx,
            wallet_op_type_code(NEW.op_type), wallet_role_code(NEW.role), NEW.amount, NEW.symbol,
            NEW.vesting_amount, NEW.vesting_symbol, wallet_trx_id_bytes(NEW.trx_id), NEW.counterparty, NEW.memo,
            NEW.author, NEW.permlink,
            CASE WHEN NEW.assets = wallet_derived_assets(wallet_op_type_code(NEW.op_type), NEW.amount, NEW.symbol,
                                                         NEW.vesting_amount, NEW.vesting_symbol)
                 THEN NULL ELSE wallet_assets_compact(NEW.assets) END)
    ON CONFLICT DO NOTHING;
    RETURN NEW;
END $$;
CREATE TRIGGER wallet_operation_events_write INSTEAD OF INSERT OR UPDATE OR DELETE ON wallet_operation_events
    FOR EACH ROW EXECUTE FUNCTION wallet_operation_events_write();

GRANT SELECT ON wallet_operation_events TO wallet_api_reader;
