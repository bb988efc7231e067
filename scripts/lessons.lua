-- lessons.lua: `make lessons` and `make lessons-check`: the measured numbers in the lessons'
-- Markdown (the README files, which readers see on the web without the book's filter), each
-- written between two markers with the expression it comes from:
--
--   the copy kernel moves <!--m gbs("02", "copy", "8192x8192")-->4062<!--/m--> GB/s
--   <!--m:%.2f ms("03", "compact:warp", "16777216")-->0.41<!--/m--> ms
--
-- The expression is book/measure.lua's (tsv, ms, gbs, gflops, best over plots/data/h200/, or
-- $PLOT_DATA); ":FMT" after "m" is a printf format (default: three significant digits, as the
-- book prints them). The markers are HTML comments: invisible on the web, dropped by the book.
--
-- Run as a pandoc filter over an empty document, from the repository's root:
--   LESSONS_FILES="a.md b.md" pandoc --lua-filter scripts/lessons.lua -f markdown -t plain /dev/null
-- rewrites each file's numbers from the data (a file whose numbers are right stays untouched);
-- with LESSONS_CHECK=1 it writes nothing, names every number that differs from what the data
-- gives (a number typed by hand, or data newer than the lesson) and fails.
local M = dofile("book/measure.lua")

local OPEN = "<!%-%-m(:?[^%s]*)%s+(.-)%s*%-%->"
local CLOSE = "<!%-%-/m%-%->"

local function line_of(text, pos)
  local n = 1
  for _ in text:sub(1, pos):gmatch("\n") do n = n + 1 end
  return n
end

function Pandoc(doc)
  local check = os.getenv("LESSONS_CHECK") == "1"
  local files = os.getenv("LESSONS_FILES") or ""
  local stale, total, changed_files = 0, 0, 0
  for path in files:gmatch("%S+") do
    local f = assert(io.open(path, "r"))
    local text = f:read("a")
    f:close()
    local out, pos, differs = {}, 1, 0
    while true do
      local s, e, fmt, expr = text:find(OPEN, pos)
      if not s then break end
      local cs, ce = text:find(CLOSE, e + 1, false)
      local next_open = text:find(OPEN, e + 1)
      if not cs or (next_open and next_open < cs) then
        error(path .. ":" .. line_of(text, s) .. ": a <!--m ...--> marker without its <!--/m-->", 0)
      end
      local old = text:sub(e + 1, cs - 1)
      local where = path .. ":" .. line_of(text, s)
      local new = M.eval(expr, fmt ~= "" and fmt:sub(2) or nil, where)
      total = total + 1
      if new ~= old then
        differs = differs + 1
        if check then
          io.stderr:write(where .. ": says " .. old .. ", the data gives " .. new ..
                          " (" .. expr .. ")\n")
        end
      end
      out[#out + 1] = text:sub(pos, e) .. new .. text:sub(cs, ce)
      pos = ce + 1
    end
    out[#out + 1] = text:sub(pos)
    if differs > 0 then
      stale = stale + differs
      changed_files = changed_files + 1
      if not check then
        local w = assert(io.open(path, "w"))
        w:write(table.concat(out))
        w:close()
      end
    end
  end
  if check then
    if stale > 0 then
      error("lessons: " .. stale .. " of " .. total .. " measured numbers differ from the data " ..
            "(make lessons rewrites them; a number is never typed by hand)", 0)
    end
    io.stderr:write("lessons: all " .. total .. " measured numbers match the data\n")
  else
    io.stderr:write("lessons: " .. total .. " measured numbers, " .. stale .. " rewritten in " ..
                    changed_files .. " file(s)\n")
  end
  return doc
end
