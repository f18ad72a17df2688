#!/usr/bin/env python3
"""Trial-table counts of a tuning DB (device checks of concurrent sweeps): rows, distinct (device,
environment, problem, config, protocol) keys, and rows still 'claimed'. No duplicates and no claims
left means two sweeps sharing the DB lost and duplicated nothing.  Usage: db_counts.py DB"""
import sqlite3
import sys

db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
rows, keys, claimed = db.execute(
    "SELECT count(*), count(DISTINCT device_id || '/' || environment_id || '/' || problem_id || '/' || config_id "
    "|| '/' || protocol_name), sum(status = 'claimed') FROM trial").fetchone()
print(f"trials {rows}, distinct keys {keys}, claimed {claimed or 0}")
sys.exit(0 if rows == keys and not claimed else 1)
