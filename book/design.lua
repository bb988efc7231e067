-- design.lua: the book's typography, on the lessons as they are written (runs last).
--
--   a chapter's "## What you will learn"      its list in a box that opens the chapter
--   a paragraph that begins "Predict ..."     a box (a paragraph whose last sentence begins
--                                             "Predict before you run" is split there first)
--   "**Q: ...**" in an interview section      a box, in the chapters and in the appendix
--   the chapter's pointer to the hints, and   boxes and numbered chips in the hints' colour
--   the hints appendix's ladders
--   the solutions appendix's listings         the file's line numbers (include.lua's startFrom)
--   every level-1 heading                     the running head of its pages; a chapter's
--                                             number in a lighter colour, and its short title
--                                             on the title page (through the .aux file)

local function raw(s) return pandoc.RawBlock("latex", s) end
local function rawi(s) return pandoc.RawInline("latex", s) end

local function escape(s)
  return (s:gsub("[\\{}$&#^_%%~]", function(c)
    if c == "\\" then return "\\textbackslash{}" end
    if c == "^" then return "\\^{}" end
    if c == "~" then return "\\~{}" end
    return "\\" .. c
  end))
end

local function boxed(env, blocks)
  local out = { raw("\\begin{" .. env .. "}") }
  for _, b in ipairs(blocks) do out[#out + 1] = b end
  out[#out + 1] = raw("\\end{" .. env .. "}")
  return out
end

-- the words up to the first one ending in ":" (at most 8 words in), set as the box's lead-in
local function lead(para, colour)
  local c = para.content
  for i = 1, math.min(#c, 16) do
    if c[i].t == "Str" and c[i].text:match(":$") then
      local head = pandoc.List()
      for j = 1, i do head:insert(c[j]) end
      local rest = pandoc.List()
      for j = i + 1, #c do rest:insert(c[j]) end
      local out = pandoc.List({ rawi("\\boxlead{" .. colour .. "}{") })
      out:extend(head); out:insert(rawi("}")); out:extend(rest)
      return pandoc.Para(out)
    end
  end
  return para
end

local function is_predict(para)
  local first = para.content[1]
  return first and first.t == "Str" and (first.text == "Predict" or first.text == "Predict:")
end

-- a paragraph whose last sentences begin "Predict before you run": the text before, and the rest
local function split_predict(para)
  local c = para.content
  for i = 3, #c - 2 do
    if c[i].t == "Str" and c[i].text == "Predict" and c[i + 2].t == "Str" and c[i + 2].text == "before"
       and c[i - 1].t ~= "Str" and c[i - 2].t == "Str" and c[i - 2].text:match("[.?!]$") then
      local a, b = pandoc.List(), pandoc.List()
      for j = 1, i - 2 do a:insert(c[j]) end
      for j = i, #c do b:insert(c[j]) end
      return pandoc.Para(a), pandoc.Para(b)
    end
  end
  return nil
end

local function is_question(block)
  if block.t ~= "Para" then return false end
  local first = block.content[1]
  return first and first.t == "Strong" and pandoc.utils.stringify(first):match("^Q:") ~= nil
end

-- the tag that ends a question, *(theme)*: the question in the box, an answer after it outside
local function split_question(para)
  for i, inl in ipairs(para.content) do
    if inl.t == "Emph" and pandoc.utils.stringify(inl):match("^%s*%(") then
      if i < #para.content then
        local q, a = pandoc.List(), pandoc.List()
        for j = 1, i do q:insert(para.content[j]) end
        for j = i + 1, #para.content do a:insert(para.content[j]) end
        while a[1] and (a[1].t == "Space" or a[1].t == "SoftBreak" or a[1].t == "LineBreak") do a:remove(1) end
        return pandoc.Para(q), (#a > 0 and pandoc.Para(a) or nil)
      end
      return para, nil
    end
  end
  return para, nil
end

local function hint_ladder(list)
  local out = { raw("\\begin{hintladder}") }
  for _, item in ipairs(list.content) do
    out[#out + 1] = raw("\\item")
    for _, b in ipairs(item) do out[#out + 1] = b end
  end
  out[#out + 1] = raw("\\end{hintladder}")
  return out
end

function Pandoc(doc)
  local out = {}
  local function add(b) out[#out + 1] = b end
  local function add_all(bs) for _, b in ipairs(bs) do add(b) end end
  local chapters = {}
  local part = nil        -- "chapter", "interview-appendix", "hints-appendix", "solutions", other
  local section = nil     -- the chapter's level-2 section, lower case
  local blocks = doc.blocks
  local i = 1
  while i <= #blocks do
    local b = blocks[i]
    if b.t == "Header" and b.level == 1 then
      local title = pandoc.utils.stringify(b)
      local num, rest = title:match("^(%d%d) · (.*)$")
      section = nil
      if b.identifier == "appendix-interview" then part = "interview-appendix"
      elseif b.identifier == "appendix-hints" then part = "hints-appendix"
      elseif title:match("^The solutions") then part = "solutions"
      elseif num then part = "chapter" else part = nil end
      if num and b.content[1].t == "Str" and b.content[1].text == num then
        -- the number and its dot in the lighter colour (the contents show it so too)
        local content = pandoc.List({ rawi("\\textcolor{accentsoft}{") })
        for j = 1, 3 do content:insert(b.content[j]) end
        content:insert(rawi("}"))
        for j = 4, #b.content do content:insert(b.content[j]) end
        b.content = content
        chapters[#chapters + 1] = "\\textbf{" .. num .. "} & " ..
          escape((rest:match("^([^,:]+)") or rest))
      end
      add(b)
      add(raw("\\renewcommand\\runninghead{" .. escape(title) .. "}"))
      i = i + 1
    elseif part == "chapter" and b.t == "Header" and b.level == 2 then
      section = pandoc.utils.stringify(b):lower()
      if section:match("^what you will learn") then
        -- the section's blocks, up to the next heading, in the opener's box
        local inner = {}
        i = i + 1
        while i <= #blocks and blocks[i].t ~= "Header" do inner[#inner + 1] = blocks[i]; i = i + 1 end
        add_all(boxed("learnbox", inner))
      else
        add(b); i = i + 1
        if section:match("^hints") and blocks[i] and blocks[i].t == "Para" then
          add_all(boxed("hintbox", { blocks[i] })); i = i + 1
        end
      end
    elseif b.t == "Header" then
      if b.level == 2 then section = pandoc.utils.stringify(b):lower() end
      add(b); i = i + 1
    elseif b.t == "Para" and (part == "chapter" or part == "interview-appendix") and is_question(b) then
      local q, a = split_question(b)
      add_all(boxed("questionbox", { lead(q, "questionbar") }))
      if a then add(a) end
      i = i + 1
    elseif b.t == "Para" and part == "interview-appendix" and #b.content == 1 and b.content[1].t == "Emph"
           and pandoc.utils.stringify(b):match("^From chapter") then
      add(pandoc.Para({ rawi("\\fromchapter{"), pandoc.Span(b.content[1].content), rawi("}") }))
      i = i + 1
    elseif b.t == "Para" and part == "chapter" and is_predict(b) then
      add_all(boxed("predictbox", { lead(b, "predictbar") })); i = i + 1
    elseif b.t == "Para" and part == "chapter" and split_predict(b) then
      local before, predict = split_predict(b)
      add(before); add_all(boxed("predictbox", { lead(predict, "predictbar") })); i = i + 1
    elseif b.t == "OrderedList" and part == "hints-appendix" then
      add_all(hint_ladder(b)); i = i + 1
    elseif b.t == "CodeBlock" and part == "solutions" and b.attributes.startFrom then
      b.classes:insert("numberLines"); add(b); i = i + 1
    else
      add(b); i = i + 1
    end
  end
  -- the title page lists the chapters: written to the .aux file, read by the next pass
  if #chapters > 0 then
    add(raw("\\makeatletter\\immediate\\write\\@auxout{\\gdef\\string\\bookchapterlist{" ..
            "\\unexpanded{" .. table.concat(chapters, "\\\\[3pt] ") .. "}}}\\makeatother"))
  end
  doc.blocks = out
  return doc
end
