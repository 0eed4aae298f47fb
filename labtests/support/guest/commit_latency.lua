-- sysbench script for the MariaDB commit-load cross-check (labtests/databases/test_cross_checks.py): each
-- event is one transaction of one row insert followed by COMMIT; the COMMIT's round trip (which,
-- with innodb_flush_log_at_trx_commit=1, waits for the redo write to be durable) is timed with
-- CLOCK_MONOTONIC and written, one value in microseconds per line, to $SL_OUT/commit-<thread>.txt.
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } sl_timespec;
int clock_gettime(int clk_id, sl_timespec *tp);
]]
local CLOCK_MONOTONIC = 1
local ts = ffi.new("sl_timespec")

local function now_us()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, ts)
  return tonumber(ts.tv_sec) * 1e6 + tonumber(ts.tv_nsec) / 1e3
end

function prepare()
  local con = sysbench.sql.driver():connect()
  con:query("CREATE TABLE IF NOT EXISTS redo_probe (id BIGINT AUTO_INCREMENT PRIMARY KEY, " ..
            "session INT NOT NULL, payload VARCHAR(255) NOT NULL) ENGINE=InnoDB")
  con:disconnect()
end

function thread_init()
  con = sysbench.sql.driver():connect()
  out = assert(io.open(string.format("%s/commit-%d.txt", os.getenv("SL_OUT"), sysbench.tid), "w"))
  insert = string.format("INSERT INTO redo_probe (session, payload) VALUES (%d, REPEAT('r', 100))", sysbench.tid)
end

function event()
  con:query("BEGIN")
  con:query(insert)
  local t0 = now_us()
  con:query("COMMIT")
  out:write(string.format("%.1f\n", now_us() - t0))
end

function thread_done()
  out:close()
  con:disconnect()
end
