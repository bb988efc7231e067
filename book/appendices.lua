-- appendices.lua: turns the lessons into a book that does not give its answers away.
--
-- Each chapter (a level-1 heading) keeps its text, except:
--   "## Hints"                 moves to the appendix "Hints", under the chapter's title;
--   "## Interview questions"   keeps the questions, and every question with its model answer
--                              moves to the appendix "Interview questions", grouped by the
--                              theme each question is tagged with: *(memory hierarchy and ...)*
-- The appendices go after the chapters and after any level-1 section marked {.main} that follows
-- them (the roofline), before the first other level-1 heading (the drills, the back matter);
-- only chapters whose heading starts with a two-digit number count as chapters.

local THEMES = {
  "profiling and bottlenecks",
  "execution model and divergence",
  "memory hierarchy and data movement",
  "host-device synchronisation and errors",
  "cross-architecture tuning",
}

local function starts_with_q(block)
  if block.t ~= "Para" then return false end
  local first = block.content[1]
  if not first or first.t ~= "Strong" then return false end
  return pandoc.utils.stringify(first):match("^Q:") ~= nil
end

-- Where the question ends: the index of its tag, the first Emph that reads "(...)".
local function tag_index(para)
  for i, inl in ipairs(para.content) do
    if inl.t == "Emph" and pandoc.utils.stringify(inl):match("^%s*%(") then return i end
  end
  return nil
end

-- The theme a question paragraph is tagged with: *(theme)*.
local function theme_of(para)
  local i = tag_index(para)
  if not i then return nil end
  local tag = pandoc.utils.stringify(para.content[i])
  -- compared without spaces: a tag broken over two source lines loses its space
  tag = tag:lower():gsub("%s", "")
  for _, t in ipairs(THEMES) do
    if tag:find(t:gsub("%s", ""), 1, true) then return t end
  end
  -- a near miss ("execution model and warp divergence") still finds its theme by its first word
  for _, t in ipairs(THEMES) do
    if tag:find(t:match("^%S+"), 1, true) then return t end
  end
  return nil
end

local function chapter_label(header)
  local text = pandoc.utils.stringify(header)
  return text:match("^(%d%d)") , text
end

function Pandoc(doc)
  local out, hints, questions = {}, {}, {}
  for _, t in ipairs(THEMES) do questions[t] = {} end
  local untagged = {}

  local chapter, chapter_title = nil, nil
  local mode = nil -- nil, "hints", "interview"
  local current_q = nil

  local function flush_q()
    if current_q then
      local t = current_q.theme
      table.insert(t and questions[t] or untagged, current_q)
      current_q = nil
    end
  end

  for _, block in ipairs(doc.blocks) do
    if block.t == "Header" and block.level == 1 then
      flush_q()
      mode = nil
      chapter, chapter_title = chapter_label(block)
      table.insert(out, block)
    elseif chapter and block.t == "Header" and block.level == 2 then
      flush_q()
      local name = pandoc.utils.stringify(block):lower()
      if name:match("^hints") then
        mode = "hints"
        table.insert(hints, pandoc.Header(2, chapter_title))
        table.insert(out, block)
        table.insert(out, pandoc.Para({ pandoc.Emph(pandoc.Inlines(
          "The hints for this chapter are in the appendix Hints, so that this page does "
          .. "not give the answer away.")) }))
      elseif name:match("^interview") then
        mode = "interview"
        table.insert(out, block)
        table.insert(out, pandoc.Para({ pandoc.Emph(pandoc.Inlines(
          "Try each one aloud first. The model answers are in the appendix Interview "
          .. "questions, grouped by theme.")) }))
      else
        mode = nil
        table.insert(out, block)
      end
    elseif mode == "hints" then
      table.insert(hints, block)
    elseif mode == "interview" then
      if starts_with_q(block) then
        flush_q()
        current_q = { chapter = chapter, title = chapter_title, theme = theme_of(block),
                      blocks = { block } }
        -- the chapter keeps the question up to its tag; an answer that follows in the same
        -- paragraph goes to the appendix only
        local i = tag_index(block)
        local question = block
        if i and i < #block.content then
          question = pandoc.Para({ table.unpack(block.content, 1, i) })
        end
        table.insert(out, question)
      elseif current_q then
        table.insert(current_q.blocks, block)
      else
        table.insert(out, block)
      end
    else
      table.insert(out, block)
    end
  end
  flush_q()

  -- the appendices go before the back matter (the first level-1 heading after the chapters
  -- that is not a chapter), or at the end
  local tail_at = #out + 1
  local seen_chapter = false
  for i, block in ipairs(out) do
    if block.t == "Header" and block.level == 1 then
      local num = chapter_label(block)
      if num then seen_chapter = true
      elseif seen_chapter and not block.classes:includes("main") then tail_at = i; break end
    end
  end

  local appendix = {}
  local function add(b) table.insert(appendix, b) end
  add(pandoc.Header(1, "Interview questions", pandoc.Attr("appendix-interview", { "unnumbered" })))
  add(pandoc.Para(pandoc.Inlines(
    "Every question of the chapters with the answer a strong candidate would give: the "
    .. "bottleneck, the measurement that shows it, the change, and its trade-off. They are "
    .. "grouped by the five themes interviews for kernel roles come back to.")))
  local function add_q(q)
    add(pandoc.Para({ pandoc.Emph(pandoc.Inlines("From chapter " .. q.title)) }))
    for _, b in ipairs(q.blocks) do add(b) end
  end
  for _, t in ipairs(THEMES) do
    if #questions[t] > 0 then
      add(pandoc.Header(2, t:sub(1, 1):upper() .. t:sub(2)))
      for _, q in ipairs(questions[t]) do add_q(q) end
    end
  end
  if #untagged > 0 then
    add(pandoc.Header(2, "Other questions"))
    for _, q in ipairs(untagged) do add_q(q) end
  end
  add(pandoc.Header(1, "Hints", pandoc.Attr("appendix-hints", { "unnumbered" })))
  add(pandoc.Para(pandoc.Inlines(
    "Each chapter's hints, gentlest first. Read one, try again, then read the next.")))
  for _, b in ipairs(hints) do add(b) end

  for i = #appendix, 1, -1 do table.insert(out, tail_at, appendix[i]) end
  doc.blocks = out
  return doc
end
