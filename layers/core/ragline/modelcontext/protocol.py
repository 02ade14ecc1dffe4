"""The source-handling protocol appended to every system prompt that carries retrieved sources."""

from __future__ import annotations

_ENABLED = """\
## Sources and citations
The sources above are labelled with short ids: c1, c2, ... for knowledge-base passages and w1, w2, ... for web pages.
- Cite a source right after the sentence or line that relies on it, by writing exactly <ref id="c1"/> (or <ref id="w1"/>).
- Cite only ids that appear in the sources above; never cite document ids (d1) or knowledge-base ids (b1).
- Never write <kb> or <web> tags, raw URLs of sources or internal identifiers yourself; the <ref/> tag is the only way to cite.
- Several sources for one claim: put the tags side by side, <ref id="c1"/><ref id="c3"/>."""

_DISABLED = """\
## Sources
Use the sources above to answer, but do not cite them: write no <ref>, <kb> or <web> tags, no source ids and no raw URLs."""


def protocol_prompt(citations_enabled: bool) -> str:
    """The citation instructions of the system prompt, or the no-citations variant."""
    return _ENABLED if citations_enabled else _DISABLED
