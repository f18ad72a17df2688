-- Schema version 12 (swap AB): KernelConfig::swap_ab (key token "_swapab": the kernel computes D^T = B A^T and stores
-- it transposed) becomes a config column. Configs stored before ran D = A B^T as given, which the default states.
ALTER TABLE config ADD COLUMN swap_ab INTEGER NOT NULL DEFAULT 0;
