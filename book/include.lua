-- include.lua: keeps one copy of everything the book shows.
--
--   ![caption](../../plots/NN-slug.gp)   the figure that script draws: build/plots/NN-slug.pdf
--   ```{.c include="solutions/01-naive-matmul/matmul.cu" lines="20-35"}
--   ```                                  the file's lines, as the learner reads them
--
-- Paths in include= are relative to the repository root, where make runs pandoc.

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
    -- the caption says where and when the numbers were measured
    local data = os.getenv("PLOT_DATA") or "plots/data/h200"
    local from = provenance(data .. "/" .. name .. ".tsv")
    if from then
      local label = data:match("^build/") and "Measured on this machine: " or "Measured on "
      img.caption:insert(pandoc.Str(" "))
      img.caption:insert(pandoc.Emph(pandoc.Inlines("(" .. label .. from .. ".)")))
    end
    return img
  end
end

function CodeBlock(block)
  local path = block.attributes["include"]
  if not path then
    return nil
  end
  local text = read_file(path)
  local range = block.attributes["lines"]
  if range then
    local first, last = range:match("^(%d+)-(%d+)$")
    if not first then
      error("include.lua: lines=" .. range .. " is not FIRST-LAST")
    end
    local out, n = {}, 0
    for line in (text .. "\n"):gmatch("(.-)\n") do
      n = n + 1
      if n >= tonumber(first) and n <= tonumber(last) then
        out[#out + 1] = line
      end
    end
    text = table.concat(out, "\n")
  end
  block.text = text:gsub("\n$", "")
  block.attributes["include"] = nil
  block.attributes["lines"] = nil
  return block
end
