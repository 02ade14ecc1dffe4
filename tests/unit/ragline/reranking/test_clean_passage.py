import pytest

from ragline.reranking.clean import clean_passage

FENCE = "```"

CASES = [
    # --- plain text and trimming
    ("plain text", "Just a sentence.", "Just a sentence."),
    ("trimmed", "  \n\n  padded  \n\n", "padded"),
    ("empty", "", ""),
    ("only whitespace", " \t\n \n", ""),
    ("crlf normalised", "a\r\nb\rc", "a\nb\nc"),
    # --- top-level fences keep only their body, verbatim
    ("backtick fence unwrapped", f"Intro\n{FENCE}python\nx = 1\n{FENCE}\nOutro", "Intro\nx = 1\nOutro"),
    ("tilde fence unwrapped", "Intro\n~~~\nx = 1\n~~~\nOutro", "Intro\nx = 1\nOutro"),
    (
        "fence body is not cleaned",
        f"{FENCE}xml\n<tag href='http://api.example.com/v1'>**not bold**</tag>\n| a | b |\n# not a heading\n{FENCE}",
        "<tag href='http://api.example.com/v1'>**not bold**</tag>\n| a | b |\n# not a heading",
    ),
    (
        "fence body keeps its whitespace",
        f"{FENCE}\ndef f():\n    return  1\n\n\n\nend\n{FENCE}",
        "def f():\n    return  1\n\n\n\nend",
    ),
    ("operators survive in code", f"{FENCE}\na * b * c\n{FENCE}", "a * b * c"),
    (
        "code-only chunk stays rerankable",
        f"{FENCE}go\nfunc answer() int {{ return 42 }}\n{FENCE}",
        "func answer() int { return 42 }",
    ),
    ("fence indented by three spaces is top-level", f"   {FENCE}\n<b>kept</b>\n   {FENCE}", "<b>kept</b>"),
    (
        "fence indented by four spaces is indented code",
        f"    {FENCE}\n    <b>code</b>\n    {FENCE}",
        f"{FENCE}\ncode\n{FENCE}",
    ),
    (
        "unclosed fence protected to the end",
        f"Intro **b**\n{FENCE}\n<b>x</b> http://u.example\n\n\n\nend",
        "Intro b\n<b>x</b> http://u.example\n\n\n\nend",
    ),
    (
        "closing fence must use the same character",
        f"{FENCE}\ncode\n~~~\n<b>still code</b>",
        "code\n~~~\n<b>still code</b>",
    ),
    (
        "closing fence at least as long",
        f"````\ncode\n{FENCE}\nstill code\n````\n**prose**",
        f"code\n{FENCE}\nstill code\nprose",
    ),
    (
        "closing fence with trailing text is not a close",
        f"{FENCE}\ncode\n{FENCE} trailing\n<b>x</b>",
        f"code\n{FENCE} trailing\n<b>x</b>",
    ),
    ("backtick in info string is not a fence", f"{FENCE}py`x\n*it*", f"{FENCE}py`x\nit"),
    ("two fences", f"a\n{FENCE}\none\n{FENCE}\n**b**\n~~~\ntwo\n~~~\nc", "a\none\nb\ntwo\nc"),
    ("empty fence", f"before\n{FENCE}\n{FENCE}\nafter", "before\n\nafter"),
    ("fence in a quote is not top-level", f"> {FENCE}\n> <b>x</b>\n> {FENCE}", f"{FENCE}\nx\n{FENCE}"),
    ("fence in a list item is not top-level", f"- {FENCE}\n  *x*\n  {FENCE}\n**after**", f"{FENCE}\nx\n{FENCE}\nafter"),
    ("inline code is not a fence", "Use `a * b` and **bold**", "Use `a * b` and bold"),
    # --- $$ blocks outside fences
    ("latex block unwrapped", "$$E = mc^2$$ and more", "E = mc^2 and more"),
    ("multi-line latex block", "$$\n\\int_0^1 x\\,dx\n$$", "\\int_0^1 x\\,dx"),
    ("latex inside a fence untouched", f"{FENCE}\n$$x$$\n{FENCE}", "$$x$$"),
    # --- HTML
    ("html tags deleted", "<div class='x'>Hello<br/>world</div>", "Helloworld"),
    ("a lone less-than survives", "a < b and c > d", "a < b and c > d"),
    # --- images and links
    ("linked image removed whole", "[![logo](http://i.example/x.png)](http://l.example) Brand", "Brand"),
    ("image deleted", "See ![chart](img/chart.png) here", "See here"),
    ("image url with parentheses", "![a](http://x.example/a_(b).png)done", "done"),
    ("link keeps text", "Read [the guide](http://docs.example/guide) now", "Read the guide now"),
    ("link url with parentheses", "[Python](https://en.wikipedia.org/wiki/Python_(language)) rocks", "Python rocks"),
    ("bare url deleted", "Visit https://example.com/a?b=c for more", "Visit for more"),
    ("http url deleted", "at http://example.com.", "at"),
    # --- tables
    ("table to text", "| Name | Age |\n|------|:---:|\n| Ann | 31 |", "Name, Age\n\nAnn, 31"),
    ("table empty cells dropped", "| a | | b |", "a, b"),
    ("indented table row", "  | x | y |", "x, y"),
    # --- headings, quotes
    ("headings stripped", "# Title\n## Sub\n###### Six", "Title\nSub\nSix"),
    ("seven hashes are not a heading", "####### seven", "####### seven"),
    ("hash without space is not a heading", "#hashtag", "#hashtag"),
    ("quotes stripped", "> quoted\n>> nested\n>no space", "quoted\nnested\nno space"),
    # --- emphasis
    ("bold italic", "***all*** **bold** *it*", "all bold it"),
    ("emphasis must hug its text", "2 * 3 * 4", "2 * 3 * 4"),
    ("emphasis does not cross lines", "*a\nb*", "*a\nb*"),
    # --- lists
    ("bullets stripped", "- one\n* two\n+ three", "one\ntwo\nthree"),
    ("ordered stripped", "1. first\n10. tenth", "first\ntenth"),
    ("nested bullets stripped", "- a\n  - b", "a\nb"),
    ("star item is a list, not emphasis", "* item *x*", "item x"),
    # --- newlines and whitespace
    ("three newlines become two", "a\n\n\n\nb", "a\n\nb"),
    ("blank lines with spaces collapse", "a\n  \n \t \n\nb", "a\n\nb"),
    ("spaces collapse", "a   b\t\tc", "a b c"),
    ("leading indentation dropped outside fences", "  indented line", "indented line"),
    # --- the order matters
    ("html removed before links", "<a href='x'>[t](http://u)</a>", "t"),
    ("table row after links", "| [a](http://u) | b |", "a, b"),
    ("heading with bold", "## **Refund** policy", "Refund policy"),
]


@pytest.mark.parametrize(("text", "expected"), [(t, e) for _, t, e in CASES], ids=[name for name, _, _ in CASES])
def test_clean_passage(text, expected):
    assert clean_passage(text) == expected


def test_placeholder_characters_in_input_are_dropped():
    assert clean_passage(f"a\ue0000\ue001b\n{FENCE}\ncode\n{FENCE}") == "a0b\ncode"


def test_input_is_not_modified():
    text = "# Title\n**x**"
    clean_passage(text)
    assert text == "# Title\n**x**"
