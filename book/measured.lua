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
--   cell(file, {col = value, ...}, column) one cell of any committed table, in its one row
--                                         whose columns match: file is a name under the data
--                                         directory ("profile-calibration", "ncu-04-1024") or a
--                                         path ("solutions/04-shared-memory-tiling/tune.tsv")
--   median(file, {col = value, ...}, column) the median of that column over every matching row
--                                         (a probe's repeated runs: probe-11-fp8-ladder)
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

local M = dofile("book/measure.lua")
local DATA = M.DATA

function Code(code)
  if not code.classes:includes("m") then return nil end
  return pandoc.Str(M.eval(code.text, code.attributes["fmt"], "measured.lua"))
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
