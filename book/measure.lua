-- measure.lua: the measurements a lesson may quote, and how a number is printed: shared by the
-- book's filter (book/measured.lua) and `make lessons` (scripts/lessons.lua). Loaded with
-- dofile("book/measure.lua") from the repository's root; returns { eval = ..., DATA = ... }.
--
--   eval(expr, fmt, where)   the Lua expression expr over tsv, ms, gbs, gflops, best, cell,
--                            median and math (measured.lua's top says what each reads), as a string: fmt (a
--                            printf format) or three significant digits; an error naming where
--                            when a row or column is missing or the value is not a number

local DATA = os.getenv("PLOT_DATA") or "plots/data/h200"
local tables = {}

-- cell(file, match, column): one cell of any tab-separated file with a header line, in the row
-- whose columns equal every key = value of match (exactly one such row, or an error). file is a
-- name under DATA without ".tsv" ("ncu-05-ring-4096", "profile-calibration") or a path from
-- the repository's root ("solutions/04-shared-memory-tiling/tune.tsv").
local files = {}
local function read_file(file)
  if files[file] then return files[file] end
  local path = file:find("/") and file or (DATA .. "/" .. file .. ".tsv")
  local f = io.open(path, "r")
  if not f then error("measure.lua: no file " .. path) end
  local header, rows = nil, {}
  for line in f:lines() do
    if not line:match("^#") and line:match("%S") then
      local cells = {}
      for c in (line .. "\t"):gmatch("([^\t]*)\t") do cells[#cells + 1] = c end
      if not header then
        header = {}
        for i, name in ipairs(cells) do header[name] = i end
      else
        rows[#rows + 1] = cells
      end
    end
  end
  f:close()
  files[file] = { path = path, header = header or {}, rows = rows }
  return files[file]
end

local function load_table(chapter)
  local path
  local p = io.popen("ls " .. DATA .. "/" .. chapter .. "*.tsv 2>/dev/null")
  for line in p:lines() do
    if line:match("/" .. chapter:gsub("%-", "%%-") .. "[^/]*%.tsv$")
       and not line:match("%-tune%.tsv$") then
      if path then error("measured.lua: chapter " .. chapter .. " matches two files in " .. DATA) end
      path = line
    end
  end
  p:close()
  if not path then error("measured.lua: no " .. DATA .. "/" .. chapter .. "*.tsv") end
  return read_file(path)
end

local function table_of(chapter)
  if not tables[chapter] then tables[chapter] = load_table(chapter) end
  return tables[chapter]
end

local function column_of(t, column)
  local c = t.header[column]
  if not c then error("measured.lua: " .. t.path .. " has no column " .. column) end
  return c
end

local function tsv(chapter, kernel, shape, column)
  local t = table_of(chapter)
  local c = column_of(t, column)
  local k, s = t.header.kernel, t.header.shape
  for _, row in ipairs(t.rows) do
    if row[k] == kernel and row[s] == shape then
      local v = tonumber(row[c])
      if not v then error("measured.lua: " .. t.path .. ": " .. kernel .. " " .. shape ..
                          ": " .. column .. " is not a number") end
      return v
    end
  end
  error("measured.lua: " .. t.path .. " has no row " .. kernel .. " " .. shape)
end

local function best(chapter, kernel, column)
  local t = table_of(chapter)
  local c, k = column_of(t, column), t.header.kernel
  local v
  for _, row in ipairs(t.rows) do
    local x = tonumber(row[c])
    if row[k] == kernel and x and (not v or x > v) then v = x end
  end
  if not v then error("measured.lua: " .. t.path .. " has no row of kernel " .. kernel) end
  return v
end

-- the table of file, the index of column, every row whose columns equal match's values, and
-- match as "k=v, ..." for errors: what cell and median both look up
local function matching(file, match, column)
  local t = read_file(file)
  local c = t.header[column]
  if not c then error("measure.lua: " .. t.path .. " has no column " .. column) end
  local want = {}
  for k, v in pairs(match) do
    if not t.header[k] then error("measure.lua: " .. t.path .. " has no column " .. k) end
    want[#want + 1] = k .. "=" .. tostring(v)
  end
  table.sort(want)
  local rows = {}
  for _, row in ipairs(t.rows) do
    local ok = true
    for k, v in pairs(match) do
      if row[t.header[k]] ~= tostring(v) then ok = false; break end
    end
    if ok then rows[#rows + 1] = row end
  end
  return t, c, rows, table.concat(want, ", ")
end

local function number(t, row, c, column)
  local v = tonumber(row[c])
  if not v then error("measure.lua: " .. t.path .. ": " .. column .. " is not a number") end
  return v
end

local function cell(file, match, column)
  local t, c, rows, want = matching(file, match, column)
  if #rows > 1 then error("measure.lua: " .. t.path .. ": two rows with " .. want) end
  if #rows == 0 then error("measure.lua: " .. t.path .. " has no row with " .. want) end
  return number(t, rows[1], c, column)
end

-- the median of a column over every row that matches (a probe's repeated runs): the middle
-- value, or the mean of the two middle ones
local function median(file, match, column)
  local t, c, rows, want = matching(file, match, column)
  if #rows == 0 then error("measure.lua: " .. t.path .. " has no row with " .. want) end
  local vals = {}
  for i, row in ipairs(rows) do vals[i] = number(t, row, c, column) end
  table.sort(vals)
  local n = #vals
  if n % 2 == 1 then return vals[(n + 1) / 2] end
  return (vals[n / 2] + vals[n / 2 + 1]) / 2
end

local env = {
  cell = cell, median = median,
  tsv = tsv, best = best, math = math,
  ms = function(c, k, s) return tsv(c, k, s, "ms") end,
  gbs = function(c, k, s) return tsv(c, k, s, "gbs") end,
  gflops = function(c, k, s) return tsv(c, k, s, "gflops") end,
}

-- 3 significant digits; thousands split by a thin space (4 086, 51 408)
local function pretty(v)
  local a = math.abs(v)
  local s
  if a >= 100 then s = string.format("%.0f", v)
  elseif a >= 10 then s = string.format("%.1f", v)
  elseif a >= 1 then s = string.format("%.2f", v)
  else s = string.format("%.3g", v) end
  local int, rest = s:match("^(%-?%d+)(.*)$")
  if int and #int > 4 then
    local sign, digits = int:match("^(%-?)(%d+)$")
    local groups = {}
    while #digits > 3 do
      table.insert(groups, 1, digits:sub(-3)); digits = digits:sub(1, -4)
    end
    table.insert(groups, 1, digits)
    s = sign .. table.concat(groups, "\u{2009}") .. rest
  end
  return s
end

local function eval(expr, fmt, where)
  local chunk, err = load("return " .. expr, "=" .. expr, "t", env)
  if not chunk then error(where .. ": `" .. expr .. "`: " .. err, 0) end
  local ok, v = pcall(chunk)
  if not ok then error(where .. ": `" .. expr .. "`: " .. tostring(v), 0) end
  if type(v) ~= "number" or v ~= v then error(where .. ": `" .. expr .. "` is not a number", 0) end
  return fmt and string.format(fmt, v) or pretty(v)
end

return { eval = eval, DATA = DATA }
