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
--
-- And one table, from $PLOT_DATA/profile-calibration.tsv (scripts/calibrate.sh writes it on the
-- reference GPU: the CPU backend's model of each rung beside Nsight Compute's counts):
--
--   ```{.calibration chapter="02-coalesced-transpose" metrics="global_load_sectors_per_request,..."}
--   ```
--
-- a row per rung of the chapter, a column per metric (default: sectors per global load and store
-- request, wavefronts per shared load and store request, divergent branches per warp), each cell
-- "model / GPU", with a line under it naming the device, driver and date and the rungs left out.
-- Until the file exists the block becomes a sentence saying the calibration is not measured yet:
-- a missing measurement is said, never filled in. The block's own text (a note for readers of
-- the lesson on the web) is dropped.

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

-- ---- the calibration table (see the top) ----------------------------------------------------

local CALIBRATION_LABELS = {
  global_load_sectors_per_request = "global load: sectors/req",
  global_store_sectors_per_request = "global store: sectors/req",
  shared_load_wavefronts_per_request = "shared load: wavefronts/req",
  shared_store_wavefronts_per_request = "shared store: wavefronts/req",
  divergent_branches_per_warp = "divergent branches/warp",
}
local CALIBRATION_DEFAULT = "global_load_sectors_per_request,global_store_sectors_per_request," ..
  "shared_load_wavefronts_per_request,shared_store_wavefronts_per_request,divergent_branches_per_warp"

local function calibration(block)
  local path = DATA .. "/profile-calibration.tsv"
  local chapter = block.attributes["chapter"]
  if not chapter then error("measured.lua: a .calibration block needs chapter=\"NN-slug\"") end
  local metrics = {}
  for m in (block.attributes["metrics"] or CALIBRATION_DEFAULT):gmatch("[^,%s]+") do
    if not CALIBRATION_LABELS[m] then error("measured.lua: no calibration metric " .. m) end
    metrics[#metrics + 1] = m
  end
  local f = io.open(path, "r")
  if not f then
    return pandoc.read("*The calibration has not been measured yet: `make calibrate` on the " ..
      "reference H200 writes `" .. path .. "`, and this table then shows, rung by rung, the " ..
      "CPU backend's count beside Nsight Compute's.*", "markdown").blocks
  end
  local meta, header, rungs, cells, left_out = {}, nil, {}, {}, {}
  for line in f:lines() do
    local key, value = line:match("^# (%w+): (.*)$")
    if key then meta[key] = meta[key] or value end
    local skipped = line:match("^# " .. chapter:gsub("%-", "%%-") .. "/([^:]+): ")
    if skipped then left_out[#left_out + 1] = "`" .. skipped .. "`" end
    if not line:match("^#") and line:match("%S") then
      local c = {}
      for cell in (line .. "\t"):gmatch("([^\t]*)\t") do c[#c + 1] = cell end
      if not header then
        header = {}
        for i, name in ipairs(c) do header[name] = i end
        for _, need in ipairs({ "chapter", "rung", "metric", "model", "ncu" }) do
          if not header[need] then error("measured.lua: " .. path .. " has no column " .. need) end
        end
      elseif c[header.chapter] == chapter then
        local rung = c[header.rung]
        if not cells[rung] then rungs[#rungs + 1] = rung; cells[rung] = {} end
        cells[rung][c[header.metric]] = { tonumber(c[header.model]), tonumber(c[header.ncu]) }
      end
    end
  end
  f:close()
  local where = (meta.device or "the GPU") .. (meta.driver and (", driver " .. meta.driver:match("^([%d%.]+)") or meta.driver) or "") ..
                (meta.date and (", " .. meta.date) or "")
  if #rungs == 0 then
    return pandoc.read("*" .. path .. " (" .. where .. ") has no rung of " .. chapter .. ".*",
                       "markdown").blocks
  end
  local md = { "| rung |" }
  for _, m in ipairs(metrics) do md[1] = md[1] .. " " .. CALIBRATION_LABELS[m] .. " |" end
  md[2] = "|---|" .. string.rep("---:|", #metrics)
  for _, r in ipairs(rungs) do
    local row = "| `" .. r .. "` |"
    for _, m in ipairs(metrics) do
      -- "--": no such request on either side (a per-request ratio of nothing), or no row
      local v = cells[r][m]
      local none = not (v and v[1] and v[2]) or (m:match("_per_request$") and v[1] == 0 and v[2] == 0)
      row = row .. " " .. (none and "--" or string.format("%.2f / %.2f", v[1], v[2])) .. " |"
    end
    md[#md + 1] = row
  end
  md[#md + 1] = ""
  md[#md + 1] = "*Each cell: the CPU backend's model / Nsight Compute on " .. where ..
    ", the same rung on the same shape (" .. path .. ")." ..
    (#left_out > 0 and (" Not compared: " .. table.concat(left_out, ", ") .. ".") or "") .. "*"
  return pandoc.read(table.concat(md, "\n"), "markdown").blocks
end

function CodeBlock(block)
  if block.classes:includes("calibration") then return calibration(block) end
  return nil
end
