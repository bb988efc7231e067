-- include.lua: keeps one copy of everything the book shows.
--
--   ![caption](../../plots/NN-slug.gp)   the figure that script draws: build/plots/NN-slug.pdf,
--                                        its caption followed by the device, driver and date
--                                        of the data it was drawn from
--   ```{.c include="solutions/01-naive-matmul/matmul.cu" lines="20-35"}
--   ```                                  the file's lines, as the learner reads them
--   ```{.c include="F" from="float acc" to="c[row * n + col] = acc;"}
--   ```                                  from a line holding one text to one holding the other;
--                                        a block that holds a copy (for the web) must match it
--   ```{.c include="F" function="transpose_padded_kernel"}
--   ```                                  a definition, with its comment, to its closing brace
--   ```{.c include="B" function="g" diff-from="A" diff-function="f"}
--   ```                                  A's f turned into B's g: each line marked "  " (kept),
--                                        "- " (removed) or "+ " (added); diff-lines, diff-from..
--
-- Excerpts lose their common indentation. A text, a function or a line that is not in the file
-- is an error, so the book never shows a stale excerpt. Paths are relative to the repository
-- root, where make runs pandoc.

local function read_file(path)
  local f = io.open(path, "r")
  if not f then
    error("include.lua: cannot read " .. path)
  end
  local text = f:read("a")
  f:close()
  return text
end

-- The "# device:", "# driver:" and "# date:" lines at the top of a measurement file.
local function provenance(tsv)
  local f = io.open(tsv, "r")
  if not f then return nil end
  local meta = {}
  for line in f:lines() do
    local key, value = line:match("^# (%w+): (.*)$")
    if not key then break end
    meta[key] = value
  end
  f:close()
  if not meta.device then return nil end
  local driver = meta.driver and meta.driver:match("^([%d%.]+)") or meta.driver
  return meta.device .. (driver and (", driver " .. driver) or "") ..
         (meta.date and (", " .. meta.date) or "")
end

-- The data file a figure was drawn from: the Makefile writes its choice (the committed
-- measurements, or fresher ones from `make bench` on this machine) to build/plots/NAME.data.
local function data_of(name)
  local f = io.open("build/plots/" .. name .. ".data", "r")
  if f then
    local path = f:read("l")
    f:close()
    if path and path ~= "" then return path end
  end
  return (os.getenv("PLOT_DATA") or "plots/data/h200") .. "/" .. name .. ".tsv"
end

function Image(img)
  local name = img.src:match("([^/]+)%.gp$")
  if name then
    local pdf = "build/plots/" .. name .. ".pdf"
    local f = io.open(pdf, "r")
    if not f then
      error("include.lua: " .. pdf .. " is missing: run make plots first")
    end
    f:close()
    img.src = pdf
    -- the caption says where and when the numbers were measured (a figure drawn from several
    -- files, the roofline, names the first: they come from one bench run)
    local files, committed, fresh = {}, nil, {}
    for path in data_of(name):gmatch("%S+") do
      files[#files + 1] = path
      if path:match("^build/") then fresh[#fresh + 1] = path:match("([^/]+)%.tsv$")
      elseif not committed then committed = path end
    end
    local note
    if #files == 1 or not committed then
      local from = provenance(files[1])
      if from then
        note = (files[1]:match("^build/") and "Measured on this machine by make bench: "
                or "Measured on ") .. from .. "."
      end
    else
      local from = provenance(committed)
      if from then
        note = "Measured on " .. from ..
               (#fresh > 0 and ("; " .. table.concat(fresh, ", ") ..
                                " measured on this machine by make bench.") or ".")
      end
    end
    if note then
      img.caption:insert(pandoc.Str(" "))
      img.caption:insert(pandoc.Emph(pandoc.Inlines("(" .. note .. ")")))
    end
    return img
  end
end

local function split_lines(text)
  local out = {}
  for line in (text:gsub("\n$", "") .. "\n"):gmatch("(.-)\n") do out[#out + 1] = line end
  return out
end

-- the common indentation of an excerpt goes: a loop body reads from the left margin
local function dedent(lines)
  local common
  for _, l in ipairs(lines) do
    if l:match("%S") then
      local ind = #l:match("^ *")
      if not common or ind < common then common = ind end
    end
  end
  if common and common > 0 then
    for i, l in ipairs(lines) do lines[i] = l:sub(common + 1) end
  end
  return lines
end

local function find(lines, needle, from, path, what)
  for i = from, #lines do
    if lines[i]:find(needle, 1, true) then return i end
  end
  error("include.lua: " .. what .. "=\"" .. needle .. "\" is not in " .. path ..
        (from > 1 and (" after line " .. (from - 1)) or ""))
end

-- The lines an include names, as a list:
--   lines="A-B"                 lines A to B
--   from="text" to="text"       from the first line holding one text to the next holding the
--                               other (both kept): survives edits above the excerpt
--   function="name"             the definition of name, with the comment just above it, to its
--                               closing brace at the left margin
local function excerpt(path, attr, what)
  local lines = split_lines(read_file(path))
  local first, last = 1, #lines
  if attr.lines then
    local a, b = attr.lines:match("^(%d+)-(%d+)$")
    if not a then error("include.lua: lines=" .. attr.lines .. " is not FIRST-LAST") end
    first, last = tonumber(a), tonumber(b)
    if last > #lines then
      error("include.lua: " .. path .. " has " .. #lines .. " lines, not " .. last)
    end
  elseif attr.from then
    first = find(lines, attr.from, 1, path, "from")
    last = attr.to and find(lines, attr.to, first, path, "to") or first
  elseif attr["function"] then
    local name = attr["function"]
    first = nil
    for i, l in ipairs(lines) do
      -- a definition starts at the left margin (a call is indented) and is not a declaration
      local at = l:find(name .. "(", 1, true)
      if at and l:match("^%S") and not l:match(";%s*$") then
        local before = l:sub(at - 1, at - 1)
        if at == 1 or not before:match("[%w_]") then first = i; break end
      end
    end
    if not first then error("include.lua: no function " .. name .. " in " .. path) end
    last = find(lines, "}", first, path, "the end of function " .. name)
    while lines[last] ~= "}" and not lines[last]:match("^};?%s*$") do
      last = find(lines, "}", last + 1, path, "the end of function " .. name)
    end
    -- with what the definition's first line leaves above it (template <...>, __global__ ...)
    while first > 1 and lines[first - 1]:match("^[%a_]") and not lines[first - 1]:match("[;{}]%s*$") do
      first = first - 1
    end
    -- and the comment block just above that
    if first > 1 and lines[first - 1]:match("%*/%s*$") then
      local i = first - 1
      while i > 1 and not lines[i]:match("^%s*/%*") do i = i - 1 end
      first = i
    end
  else
    return lines, 1
  end
  local out = {}
  for i = first, last do out[#out + 1] = lines[i] end
  return dedent(out), first
end

local function attrs_of(block, prefix)
  local a = {}
  for _, k in ipairs({ "lines", "from", "to", "function" }) do
    a[k] = block.attributes[prefix .. k]
    block.attributes[prefix .. k] = nil
  end
  return a
end

-- A line diff (longest common subsequence) of two short excerpts: " ", "-" or "+" before each
-- line, the whole of both (they are a screen long), as `diff -u` would mark them.
local function diff(a, b)
  local n, m = #a, #b
  local L = {}
  for i = n + 1, 1, -1 do
    L[i] = {}
    for j = m + 1, 1, -1 do
      if i > n or j > m then L[i][j] = 0
      elseif a[i] == b[j] then L[i][j] = L[i + 1][j + 1] + 1
      else L[i][j] = math.max(L[i + 1][j], L[i][j + 1]) end
    end
  end
  local out, i, j = {}, 1, 1
  while i <= n or j <= m do
    if i <= n and j <= m and a[i] == b[j] then
      out[#out + 1] = "  " .. a[i]; i = i + 1; j = j + 1
    elseif i <= n and (j > m or L[i + 1][j] >= L[i][j + 1]) then
      out[#out + 1] = "- " .. a[i]; i = i + 1   -- removed lines first, as diff -u
    else
      out[#out + 1] = "+ " .. b[j]; j = j + 1
    end
  end
  return out
end

function CodeBlock(block)
  local path = block.attributes["include"]
  local old = block.attributes["diff-from"]
  if not path then
    return nil
  end
  block.attributes["include"] = nil
  local new_lines, first = excerpt(path, attrs_of(block, ""))
  if old then
    -- ```{.c include="B.cu" function="g" diff-from="A.cu" diff-function="f"}: A's f, changed
    -- into B's g, each line marked as kept, removed or added
    block.attributes["diff-from"] = nil
    local old_lines = excerpt(old, attrs_of(block, "diff-"))
    new_lines = diff(old_lines, new_lines)
  else
    -- the excerpt's first line in the file: a listing numbered by the book starts there
    block.attributes["startFrom"] = tostring(first)
  end
  local text = table.concat(new_lines, "\n")
  -- A lesson may keep a copy of the excerpt inside the block, for readers of the README on the
  -- web; the book shows the file, and a copy that no longer matches it stops the build.
  local copy = block.text:gsub("%s+$", "")
  if copy:match("%S") and not old then
    local norm = function(t) return (table.concat(dedent(split_lines(t)), "\n"):gsub("[ \t]+\n", "\n")) end
    if norm(copy) ~= norm(text) then
      error("include.lua: the copy of " .. path .. " in this block no longer matches the file:\n"
            .. copy .. "\n--- the file has ---\n" .. text
            .. "\n(update the copy, or empty the block and let the book read the file)")
    end
  end
  block.text = text
  return block
end

-- In a table, a shape such as 3999x4000x4008 may break after an "x": a narrow column of shapes
-- then wraps instead of running into its neighbour.
function Table(tbl)
  return pandoc.walk_block(tbl, {
    Str = function(s)
      if not s.text:match("^%d+x%d+x%d+$") then return nil end
      local out = {}
      for part, x in s.text:gmatch("(%d+)(x?)") do
        out[#out + 1] = pandoc.Str(part .. x)
        if x ~= "" then out[#out + 1] = pandoc.RawInline("latex", "\\allowbreak{}") end
      end
      return out
    end })
end
