-- Compiled only into the deploy test's "newer" package (scripts/package
-- --extra-migrations): the upgrade must apply it through postinst.
COMMENT ON TABLE schema_version IS 'upgraded by deploy_docs_test';
