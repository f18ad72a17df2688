-- Schema version 10 (cuBLASLt as a tuned backend): a baseline row keeps the cublasLtMatmulAlgo_t it timed (64 bytes,
-- which cuBLASLt documents as reusable with the same cuBLASLt version, environment.cublaslt_version) and the workspace
-- it needs, so the loader can run exactly that algorithm in another process. Rows stored before have no algorithm
-- (NULL): the loader never replays them.
ALTER TABLE baseline ADD COLUMN algo_data BLOB;
ALTER TABLE baseline ADD COLUMN workspace_bytes INTEGER NOT NULL DEFAULT 0;
