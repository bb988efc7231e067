-- report.lua: the tables and boxes of `make report` (scripts/report.sh writes the Markdown and
-- the files these read, all under build/report/NN/; book/include.lua brings in the listings).
-- Every text of a run (a grader's message, a device's name, a learner's notes) is read here
-- from its file and put into the document as text, never pasted into the Markdown, so nothing
-- in it is taken for Markdown or LaTeX.
--
--   ::: {.facts tsv="F"}        F's "key<TAB>value" lines as a two-column table (the first page's
--   :::                         device, backend, date, seed)
--   ::: {.verdicts tsv="F"}     the grader's per-test rows (build/grade.tsv's columns): step,
--   :::                         test, verdict, message; "ladder=1" takes the rows a step (the
--                               step column "k/n") instead
--   ::: {.bench tsv="F"}        `grade --bench` rows (chapter, kernel, shape, ms, gbs, gflops):
--   :::                         each with its speedup over the first rung of its shape, and
--                               the SM clock and power while it ran where the rows carry them
--                               (sm_mhz, watts)
--   ::: {.notes file="F"}       the learner's notes, Markdown, their headings set below the
--   :::                         report's own
--   ::: request                 a box in the hints' colour (book/header.tex's hintbox): the
--   :::                         request for the notes when they are missing

local function read_tsv(path)
  local f = io.open(path, "r")
  if not f then error("report.lua: cannot read " .. path) end
  local header, rows, comments = nil, {}, {}
  for line in f:lines() do
    if line:match("^#") then
      comments[#comments + 1] = line
    elseif line:match("%S") then
      local cells = {}
      for c in (line .. "\t"):gmatch("([^\t]*)\t") do cells[#cells + 1] = c end
      if not header then header = cells else rows[#rows + 1] = cells end
    end
  end
  f:close()
  return header or {}, rows, comments
end

local function plain(s) return { pandoc.Plain({ pandoc.Str(s or "") }) } end

-- a table of texts; widths: fractions of the line (a long message then wraps in its column)
local function table_of(headers, rows, widths, aligns)
  local hs = {}
  for i, h in ipairs(headers) do hs[i] = plain(h) end
  local rs = {}
  for r, row in ipairs(rows) do
    rs[r] = {}
    for i = 1, #headers do rs[r][i] = plain(row[i]) end
  end
  local al = {}
  for i = 1, #headers do al[i] = (aligns and aligns[i]) or pandoc.AlignDefault end
  local simple = pandoc.SimpleTable({}, al, widths, hs, rs)
  return pandoc.utils.from_simple_table(simple)
end

local function col(header, name, optional)
  for i, h in ipairs(header) do if h == name then return i end end
  if optional then return nil end
  error("report.lua: no column " .. name)
end

local function facts(div)
  -- no header line: every line is a fact
  local f = io.open(div.attributes.tsv, "r")
  if not f then error("report.lua: cannot read " .. div.attributes.tsv) end
  local all = {}
  for line in f:lines() do
    local k, v = line:match("^([^\t]*)\t(.*)$")
    if k then all[#all + 1] = { k, v } end
  end
  f:close()
  return table_of({ "", "" }, all, { 0.22, 0.74 })
end

local function verdicts(div)
  local header, rows = read_tsv(div.attributes.tsv)
  if #header == 0 then
    return pandoc.Para({ pandoc.Emph({ pandoc.Str("The grader wrote no verdicts (see its output below).") }) })
  end
  local cs, ct, cv, cm = col(header, "step"), col(header, "test"), col(header, "verdict"), col(header, "message")
  local ladder = div.attributes.ladder == "1"
  local out = {}
  for _, r in ipairs(rows) do
    local is_step = (r[cs] or ""):match("^%d+/%d+$") ~= nil
    if is_step == ladder then
      out[#out + 1] = { r[cs], r[ct], r[cv], r[cm] }
    end
  end
  if #out == 0 then
    return pandoc.Para({ pandoc.Emph({ pandoc.Str(ladder and "No step lines: this chapter is graded whole."
                                                       or "No per-test verdicts.") }) })
  end
  return table_of({ "step", ladder and "step's idea" or "test", "verdict", "message" }, out,
                  { 0.07, 0.36, 0.08, 0.49 })
end

local function bench(div)
  local header, rows, comments = read_tsv(div.attributes.tsv)
  local ck, cs, cms = col(header, "kernel"), col(header, "shape"), col(header, "ms")
  local cg, cf = col(header, "gbs"), col(header, "gflops")
  -- the clocks while each row ran: in files written since the rows carry them
  local cmhz, cw = col(header, "sm_mhz", true), col(header, "watts", true)
  local first = {}
  local out = {}
  for _, r in ipairs(rows) do
    local ms = tonumber(r[cms])
    if ms and not first[r[cs]] then first[r[cs]] = { ms = ms, kernel = r[ck] } end
    local base = first[r[cs]]
    local speedup = (ms and ms > 0 and base) and string.format("%.2fx over %s", base.ms / ms, base.kernel) or ""
    if cmhz then
      out[#out + 1] = { r[ck], r[cs], r[cms], r[cg], r[cf], r[cmhz], cw and r[cw] or "NA", speedup }
    else
      out[#out + 1] = { r[ck], r[cs], r[cms], r[cg], r[cf], speedup }
    end
  end
  local blocks = {}
  for _, c in ipairs(comments) do
    blocks[#blocks + 1] = pandoc.Plain({ pandoc.Str((c:gsub("^#%s*", ""))) })
    blocks[#blocks + 1] = pandoc.Plain({ pandoc.LineBreak() })
  end
  if cmhz then
    blocks[#blocks + 1] = table_of({ "kernel", "shape", "ms", "GB/s", "GFLOP/s", "SM MHz", "W",
                                     "speedup" }, out,
                                   { 0.20, 0.14, 0.09, 0.09, 0.10, 0.08, 0.06, 0.22 })
  else
    blocks[#blocks + 1] = table_of({ "kernel", "shape", "ms", "GB/s", "GFLOP/s", "speedup" }, out,
                                   { 0.22, 0.16, 0.11, 0.11, 0.11, 0.25 })
  end
  return blocks
end

local function notes(div)
  local f = io.open(div.attributes.file, "r")
  if not f then error("report.lua: cannot read " .. div.attributes.file) end
  local text = f:read("a")
  f:close()
  local doc = pandoc.read(text, "markdown")
  -- the notes' headings go under the report's section: # becomes ###
  return pandoc.walk_block(pandoc.Div(doc.blocks), {
    Header = function(h) h.level = math.min(h.level + 2, 6); return h end,
  }).content
end

function Div(div)
  if div.classes:includes("facts") then return facts(div) end
  if div.classes:includes("verdicts") then return verdicts(div) end
  if div.classes:includes("bench") then return bench(div) end
  if div.classes:includes("notes") then return notes(div) end
  if div.classes:includes("request") then
    local out = { pandoc.RawBlock("latex", "\\begin{hintbox}") }
    for _, b in ipairs(div.content) do out[#out + 1] = b end
    out[#out + 1] = pandoc.RawBlock("latex", "\\end{hintbox}")
    return out
  end
end
