-- Placeholder on the `gate` branch: version 5 belongs to the `compare` branch's per-sample measurement
-- table. It changes nothing; at merge the real 0005 replaces this file (the lead renumbers).
SELECT 1;
