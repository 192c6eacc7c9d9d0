-- 0031: the balance pass's input kept by the writers (issue 31; docs/store-layout.md, "The pass's input").
-- The pass read every event back (wallet_events joined to wallet_accounts, sorted) and parsed each
-- block's stored operations again for their balance changes. The writers have those changes from the
-- decoder already: they now keep them, per block and write, for the events they insert that change a
-- balance (wallet::encode_pending: each under the account whose run it joins, by id), and the pass reads
-- these rows in block order and deletes them once passed. Only the blocks above the pass's checkpoint
-- have rows: nothing per event is kept.
CREATE TABLE wallet_balance_pending (
    block_num integer NOT NULL,
    events    bytea   NOT NULL
);
ALTER TABLE wallet_balance_pending ALTER COLUMN events SET STORAGE MAIN;
CREATE INDEX wallet_balance_pending_block ON wallet_balance_pending (block_num);

-- Events without rows there: those stored before this migration, and those written by hand through
-- wallet_operation_events. The pass reads the events themselves (as before) for its periods up to
-- events_read_through.
ALTER TABLE wallet_balance_snapshot_state ADD COLUMN events_read_through integer NOT NULL DEFAULT 0;
UPDATE wallet_balance_snapshot_state SET events_read_through = coalesce((SELECT max(block_num) FROM wallet_blocks), 0);

-- A write through the view (INSERT, UPDATE or DELETE of an event) raises events_read_through to its
-- block. Fires before wallet_operation_events_write (triggers of one event fire in name order) and
-- passes the row on.
CREATE FUNCTION wallet_balance_events_written() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    block integer;
BEGIN
    IF TG_OP = 'DELETE' THEN
        block := OLD.block_num;
    ELSIF TG_OP = 'UPDATE' THEN
        block := greatest(OLD.block_num, NEW.block_num);
    ELSE
        block := NEW.block_num;
    END IF;
    UPDATE wallet_balance_snapshot_state SET events_read_through = block WHERE events_read_through < block;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER wallet_operation_events_balance_read INSTEAD OF INSERT OR UPDATE OR DELETE ON wallet_operation_events
    FOR EACH ROW EXECUTE FUNCTION wallet_balance_events_written();
