-- 0003: the reward aggregates keyed by (account, day, ...) instead of
-- (account, op_type, day, ...). get_reward_totals reads one account's days
-- in a range (or the lifetime row, day = 'infinity') for every op type at
-- once: with the day second in the key that is one narrow index range, where
-- the old key made PostgreSQL walk every day of every op type of the account
-- (thousands of rows for an old account) to find a handful.
-- The triggers' ON CONFLICT clauses name the same column sets, so they keep
-- working unchanged.

ALTER TABLE wallet_reward_daily DROP CONSTRAINT wallet_reward_daily_pkey;
ALTER TABLE wallet_reward_daily ADD PRIMARY KEY (account, day, op_type);

ALTER TABLE wallet_reward_liquid_daily DROP CONSTRAINT wallet_reward_liquid_daily_pkey;
ALTER TABLE wallet_reward_liquid_daily ADD PRIMARY KEY (account, day, op_type, symbol);
