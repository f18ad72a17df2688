-- Schema version 4 (kernel v2): the consumer mainloop schedule and the fast-mode promotion interval become
-- config columns (KernelConfig::mainloop, KernelConfig::promote_every; key tokens _1g|_2g and _pP). Configs
-- stored before kernel v2 ran the one-group schedule promoting every k-block, which the defaults state.
ALTER TABLE config ADD COLUMN mainloop TEXT NOT NULL DEFAULT '1g';
ALTER TABLE config ADD COLUMN promote_every INTEGER NOT NULL DEFAULT 1;
