-- Schema version 4 is reserved for the config-columns change developed on another branch; this
-- placeholder keeps the migration numbers contiguous on the `compare` branch. Replace it with that
-- branch's 0004 (or renumber 0005) when merging.
SELECT 1;
