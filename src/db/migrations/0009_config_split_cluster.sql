-- Schema version 9 (decode shapes): the cluster split (KernelConfig::split_cluster, key token "sk<S>c": the split_k
-- CTAs of one tile form a cluster and reduce through distributed shared memory) becomes a config column.
-- Configs stored before reduced their splits through the global workspace, which the default states.
ALTER TABLE config ADD COLUMN split_cluster INTEGER NOT NULL DEFAULT 0;
