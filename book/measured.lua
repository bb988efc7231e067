-- measured.lua: numbers in the text that come from the measurements, never typed in by hand.
--
--   `gbs("02", "copy", "8192x8192")`{.m}                      4086
--   `8 * 8192^2 / gbs("02", "copy", "8192x8192") / 1e6`{.m fmt="%.3f"}   0.131
--
-- An inline code span with the class "m" is a Lua expression, evaluated here and replaced by its
-- value. It can read the committed measurements (plots/data/h200/NN-slug.tsv, or $PLOT_DATA):
--
--   tsv(chapter, kernel, shape, column)   one cell; chapter is "02" or "02-coalesced-transpose",
--                                         column is ms, gbs or gflops
--   ms(c, k, s), gbs(c, k, s), gflops(c, k, s)   the same, one column each
--   best(chapter, kernel, column)         the largest value of that column over every shape
--
-- A row or a column that is not there is an error, so the book fails to build (and `make test`
-- fails) instead of printing a number nobody measured. Formats: fmt="%.1f" (a printf format), or
-- by default a number rounded to three significant digits, with thin spaces between thousands.

local DATA = os.getenv("PLOT_DATA") or "plots/data/h200"
local tables = {}

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
  local rows, header = {}, nil
  for line in io.lines(path) do
    if not line:match("^#") and line:match("%S") then
      local cells = {}
      for cell in (line .. "\t"):gmatch("([^\t]*)\t") do cells[#cells + 1] = cell end
      if not header then
        header = {}
        for i, name in ipairs(cells) do header[name] = i end
      else
        rows[#rows + 1] = cells
      end
    end
  end
  return { path = path, header = header or {}, rows = rows }
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

local env = {
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

function Code(code)
  if not code.classes:includes("m") then return nil end
  local chunk, err = load("return " .. code.text, "=" .. code.text, "t", env)
  if not chunk then error("measured.lua: `" .. code.text .. "`: " .. err) end
  local ok, v = pcall(chunk)
  if not ok then error("measured.lua: `" .. code.text .. "`: " .. tostring(v), 0) end
  if type(v) ~= "number" or v ~= v then
    error("measured.lua: `" .. code.text .. "` is not a number")
  end
  local fmt = code.attributes["fmt"]
  return pandoc.Str(fmt and string.format(fmt, v) or pretty(v))
end
