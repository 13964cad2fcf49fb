-- wrk pacing: each connection waits between requests, so the offered load is set by the
-- number of connections (an open-ish loop), not by how fast the server answers.
local pause_ms = tonumber(os.getenv("GLEANER_DEMO_PAUSE_MS") or "20")
function delay()
  return pause_ms
end
