-- 0004: the roles of operations beyond spec 000's 15 where none of the
-- spec's eight fits (docs/operations.md): the two sides of a market fill
-- (fill_order), `taker` (current_owner) and `maker` (open_owner).
ALTER TABLE wallet_operation_events DROP CONSTRAINT wallet_operation_events_role_check;
ALTER TABLE wallet_operation_events ADD CONSTRAINT wallet_operation_events_role_check
    CHECK (role IN ('sender', 'receiver', 'delegator', 'delegatee', 'author', 'curator', 'owner', 'beneficiary',
                    'taker', 'maker'));
