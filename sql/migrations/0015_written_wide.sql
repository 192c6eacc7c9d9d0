-- 0015: the load's per-row work in PostgreSQL made smaller.
--   wide  was computed per row from op_type (a generated column: a function
--         call per row written, 7.6% of PostgreSQL's CPU while loading);
--         now the writers store it (the C++ writer from the decoder's own
--         table of spec types, which a foundation test keeps equal to
--         wallet_is_spec_type; the view's trigger below). DROP EXPRESSION
--         keeps every stored value; NOT NULL makes a writer that forgets it
--         fail instead of writing rows no page finds.
--   CHECKs  virtual_op >= 0 and op_in_trx >= 0 go: the decoder refuses
--         negative values of both (its integer fields have a minimum of 0)
--         and neither is part of a key or an amount. The checks that guard
--         the keys stay (block_num > 0, block_seq >= 0, the role code and
--         block_seq ranges that the keyset's block_seq * 100 + role folds).
ALTER TABLE wallet_events
    ALTER COLUMN wide DROP EXPRESSION,
    ALTER COLUMN wide SET NOT NULL,
    DROP CONSTRAINT wallet_events_virtual_op_check,
    DROP CONSTRAINT wallet_events_op_in_trx_check;

-- As 0007's, with `wide` written.
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
                               assets, wide)
    VALUES (NEW."timestamp", account_id, NEW.block_num, NEW.block_seq, NEW.virtual_op, NEW.op_in_trx,
            wallet_op_type_code(NEW.op_type), wallet_role_code(NEW.role), NEW.amount, NEW.symbol,
            NEW.vesting_amount, NEW.vesting_symbol, wallet_trx_id_bytes(NEW.trx_id), NEW.counterparty, NEW.memo,
            NEW.author, NEW.permlink,
            CASE WHEN NEW.assets = wallet_derived_assets(wallet_op_type_code(NEW.op_type), NEW.amount, NEW.symbol,
                                                         NEW.vesting_amount, NEW.vesting_symbol)
                 THEN NULL ELSE wallet_assets_compact(NEW.assets) END,
            NOT wallet_is_spec_type(wallet_op_type_code(NEW.op_type)))
    ON CONFLICT DO NOTHING;
    RETURN NEW;
END $$;
