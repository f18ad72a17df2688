-- Placeholder on the `gate` branch: version 4 belongs to the kernel-v2 branch's migration. It changes
-- nothing; at merge the real 0004 replaces this file (the lead renumbers).
SELECT 1;
