import asyncio
import json

import pytest

from ragline.config import load_config, render_placeholders
from ragline.models.base import ModelCallError
from ragline.models.registry import ModelRegistry
from ragline.pipeline.plugin import EventManager
from ragline.pipeline.query_understand import (
    IMAGE_DESCRIPTION_EXTRA,
    UNDERSTAND_MAX_TOKENS,
    UNDERSTAND_MAX_TOKENS_WITH_IMAGES,
    PluginQueryUnderstand,
)
from ragline.store.models import Message
from ragline.types import ChatManage, EventType, History
from ragline.understanding.conversation import NO_CONVERSATION
from ragline.understanding.notes import InMemoryUserMessageNotes
from tests.support.chat_models import ScriptedChatModel

_, TEMPLATES = load_config()


# Fakes --------------------------------------------------------------------------------------------------------


def registry(*models: ScriptedChatModel, default: str = "") -> ModelRegistry:
    result = ModelRegistry()
    for model in models:
        result.add_chat_model(model.model_id, lambda model=model: model, default=model.model_id == default)
    return result


class RecordingSessions:
    def __init__(self, messages=(), error: Exception | None = None) -> None:
        self.messages = list(messages)
        self.error = error
        self.calls = []

    def recent_messages(self, session_id, limit):
        self.calls.append((session_id, limit))
        if self.error is not None:
            raise self.error
        return list(self.messages)


class FailingNotes:
    def set_image_description(self, session_id, message_id, text):
        raise RuntimeError("store down")


class NextRecorder:
    """Registered after the plugin: proves the chain went on."""

    def __init__(self) -> None:
        self.ran = False

    def activation_events(self):
        return [EventType.QUERY_UNDERSTAND]

    async def on_event(self, event_type, cm, next):
        self.ran = True
        return await next()


def msg(request_id: str, role: str, content: str, minute: int) -> Message:
    stamp = f"2024-01-01T00:{minute:02d}:00.000+00:00"
    return Message(
        id=f"{request_id}-{role}",
        session_id="sess-1",
        tenant_id="t-1",
        request_id=request_id,
        role=role,
        content=content,
        is_completed=True,
        created_at=stamp,
        updated_at=stamp,
    )


def reply(**fields) -> str:
    return json.dumps(fields)


def run(plugin: PluginQueryUnderstand, cm: ChatManage) -> bool:
    """Trigger the stage; the stage never fails, and it always hands over to the next link."""
    manager = EventManager()
    manager.register(plugin)
    recorder = NextRecorder()
    manager.register(recorder)

    async def trigger():
        result = await manager.trigger(EventType.QUERY_UNDERSTAND, cm)
        await plugin.wait_for_notes()
        return result

    assert asyncio.run(trigger()) is None
    return recorder.ran


def plugin_for(models: ModelRegistry, sessions=None, **kwargs) -> PluginQueryUnderstand:
    return PluginQueryUnderstand(models, sessions or RecordingSessions(), TEMPLATES, **kwargs)


def user_text(model: ScriptedChatModel) -> str:
    return model.messages[-1].content


def intent_prompt(intent: str, language: str = "English") -> str:
    return render_placeholders(TEMPLATES.get("intent_prompts", intent), {"language": language})


# Rewrite with history -----------------------------------------------------------------------------------------


def test_follow_up_is_rewritten_using_the_conversation(make_request):
    sessions = RecordingSessions(
        [
            msg("req-1", "user", "Does it stream answers?", 3),  # the current turn: not history
            msg("r1", "assistant", "ragline is an event-driven RAG pipeline.", 2),
            msg("r1", "user", "What is ragline?", 1),
        ]
    )
    model = ScriptedChatModel("chat", reply(rewrite_query="Does ragline stream answers?", intent="kb_search"))
    cm = ChatManage.start(make_request(query="Does it stream answers?", session_id="sess-1", max_rounds=5))
    assert run(plugin_for(registry(model), sessions), cm)

    assert sessions.calls == [("sess-1", 20)]
    system, user = model.messages
    assert system.role == "system"
    assert user.role == "user"
    assert "--- BEGIN ROUND 1 ---\nUser: What is ragline?\nAssistant: ragline is an event-driven RAG pipeline.\n" in (
        user.content
    )
    assert "Does it stream answers?" in user.content
    assert "English" in system.content
    assert cm.state.rewrite_query == "Does ragline stream answers?"
    assert cm.request.query == "Does it stream answers?"
    assert cm.state.intent == "kb_search"
    assert cm.state.system_prompt_override == ""
    assert [h.request_id for h in cm.state.history] == ["r1"]


def test_sampling_options(make_request):
    model = ScriptedChatModel("chat", reply(rewrite_query="q2"))
    run(plugin_for(registry(model)), ChatManage.start(make_request()))
    assert model.only_options.temperature == 0.3
    assert model.only_options.max_tokens == UNDERSTAND_MAX_TOKENS == 150
    assert model.only_options.thinking is False


def test_history_loaded_by_load_history_is_reused(make_request):
    sessions = RecordingSessions()
    model = ScriptedChatModel("chat", reply(rewrite_query="q2"))
    cm = ChatManage.start(make_request())
    cm.state.history = [History(query="earlier question", answer="earlier answer", request_id="r0")]
    run(plugin_for(registry(model), sessions), cm)
    assert sessions.calls == []
    assert "User: earlier question\nAssistant: earlier answer" in user_text(model)


def test_single_turn_conversations_read_no_history(make_request):
    sessions = RecordingSessions([msg("r1", "user", "old", 1), msg("r1", "assistant", "old answer", 2)])
    model = ScriptedChatModel("chat", reply(rewrite_query="q2"))
    cm = ChatManage.start(make_request(max_rounds=0))
    run(plugin_for(registry(model), sessions), cm)
    assert sessions.calls == []
    assert NO_CONVERSATION in user_text(model)
    assert cm.state.history == []


def test_history_read_failure_does_not_stop_understanding(make_request):
    model = ScriptedChatModel("chat", reply(rewrite_query="ragline, rewritten", intent="summarize"))
    cm = ChatManage.start(make_request())
    assert run(plugin_for(registry(model), RecordingSessions(error=RuntimeError("db down"))), cm)
    assert cm.state.rewrite_query == "ragline, rewritten"
    assert cm.state.intent == "summarize"


def test_custom_history_window(make_request):
    sessions = RecordingSessions()
    run(
        plugin_for(registry(ScriptedChatModel("chat", "{}")), sessions, history_messages=8),
        ChatManage.start(make_request()),
    )
    assert sessions.calls == [("sess-1", 8)]


# Intent routes ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw_intent", ["kb_search", "KB-Search", "clarification", "summarize", "", "weather"])
def test_retrieval_intents_keep_retrieval_and_set_no_override(make_request, raw_intent):
    model = ScriptedChatModel("chat", reply(rewrite_query="q2", intent=raw_intent))
    cm = ChatManage.start(make_request())
    run(plugin_for(registry(model)), cm)
    assert cm.needs_retrieval()
    assert cm.state.system_prompt_override == ""
    assert cm.state.intent in ("kb_search", "clarification", "summarize", "")


@pytest.mark.parametrize("intent", ["greeting", "chitchat", "follow_up", "image_only", "doc_only"])
def test_non_retrieval_intents_take_the_intent_prompt(make_request, intent):
    model = ScriptedChatModel("chat", reply(rewrite_query="hello there", intent=intent))
    cm = ChatManage.start(make_request(language="French"))
    run(plugin_for(registry(model)), cm)
    assert cm.state.intent == intent
    assert not cm.needs_retrieval()
    assert cm.state.system_prompt_override == intent_prompt(intent, "French")
    assert "French" in cm.state.system_prompt_override
    assert "{{language}}" not in cm.state.system_prompt_override


def test_web_search_intent_with_web_search_off_says_it_is_off(make_request):
    model = ScriptedChatModel("chat", reply(rewrite_query="latest news", intent="Web Search"))
    cm = ChatManage.start(make_request(web_search_enabled=False))
    run(plugin_for(registry(model)), cm)
    assert cm.state.intent == "web_search"
    assert not cm.needs_retrieval()
    assert cm.state.system_prompt_override == intent_prompt("web_search")
    assert "web search is turned off" in cm.state.system_prompt_override


def test_web_search_intent_with_web_search_on_searches(make_request):
    model = ScriptedChatModel("chat", reply(rewrite_query="latest news", intent="web_search"))
    cm = ChatManage.start(make_request(web_search_enabled=True))
    run(plugin_for(registry(model)), cm)
    assert cm.needs_retrieval()
    assert cm.state.system_prompt_override == ""


def test_agent_intent_prompt_wins_and_is_used_as_written(make_request):
    agent = {"greeting": "  Hi! I am the HR assistant.\n"}
    model = ScriptedChatModel("chat", reply(rewrite_query="hello", intent="greeting"))
    cm = ChatManage.start(make_request())
    run(plugin_for(registry(model), agent_intent_prompts=agent), cm)
    assert cm.state.system_prompt_override == "  Hi! I am the HR assistant.\n"


@pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
def test_blank_agent_intent_prompt_falls_back_to_the_global_one(make_request, blank):
    model = ScriptedChatModel("chat", reply(rewrite_query="hello", intent="chitchat"))
    cm = ChatManage.start(make_request())
    run(plugin_for(registry(model), agent_intent_prompts={"chitchat": blank}), cm)
    assert cm.state.system_prompt_override == intent_prompt("chitchat")


def test_agent_prompt_for_a_retrieval_intent_is_not_applied(make_request):
    model = ScriptedChatModel("chat", reply(rewrite_query="q2", intent="kb_search"))
    cm = ChatManage.start(make_request())
    run(plugin_for(registry(model), agent_intent_prompts={"kb_search": "never"}), cm)
    assert cm.state.system_prompt_override == ""


def test_truncated_reply_keeps_the_closed_fields(make_request):
    model = ScriptedChatModel(
        "chat", '{"rewrite_query":"How do I reset my password?","intent":"gree', finish_reason="length"
    )
    cm = ChatManage.start(make_request(query="reset pw?"))
    run(plugin_for(registry(model)), cm)
    assert cm.state.rewrite_query == "How do I reset my password?"
    assert cm.state.intent == ""
    assert cm.needs_retrieval()


def test_empty_rewrite_keeps_the_question_but_takes_the_intent(make_request):
    model = ScriptedChatModel("chat", reply(rewrite_query="  ", intent="greeting"))
    cm = ChatManage.start(make_request(query="hi!"))
    run(plugin_for(registry(model)), cm)
    assert cm.state.rewrite_query == "hi!"
    assert cm.state.intent == "greeting"


# Skips and degradation ----------------------------------------------------------------------------------------


def test_skipped_when_rewrite_is_off_and_there_are_no_images(make_request):
    model = ScriptedChatModel("chat", reply(rewrite_query="should not happen", intent="greeting"))
    sessions = RecordingSessions()
    cm = ChatManage.start(make_request(enable_rewrite=False))
    assert run(plugin_for(registry(model), sessions), cm)
    assert model.calls == []
    assert sessions.calls == []
    assert cm.state.rewrite_query == cm.request.query
    assert cm.state.intent == ""


def test_images_run_understanding_even_when_rewrite_is_off(make_request):
    model = ScriptedChatModel("chat", reply(rewrite_query="what is in this chart", intent="image_only"))
    cm = ChatManage.start(make_request(enable_rewrite=False, images=("https://x/chart.png",)))
    run(plugin_for(registry(model)), cm)
    assert len(model.calls) == 1
    assert cm.state.intent == "image_only"


def test_missing_model_keeps_the_question(make_request):
    cm = ChatManage.start(make_request(query="original"))
    assert run(plugin_for(ModelRegistry()), cm)
    assert cm.state.rewrite_query == "original"
    assert cm.state.intent == ""


@pytest.mark.parametrize("error", [ModelCallError("timeout"), RuntimeError("adapter bug")])
def test_model_error_keeps_the_question(make_request, error):
    model = ScriptedChatModel("chat", error)
    cm = ChatManage.start(make_request(query="original"))
    assert run(plugin_for(registry(model)), cm)
    assert cm.state.rewrite_query == "original"
    assert cm.state.intent == ""
    assert cm.state.system_prompt_override == ""


@pytest.mark.parametrize(
    "garbage", ["", "I think the user wants to know about X.", "{not json", '{"rewrite_query":"cut']
)
def test_unreadable_reply_changes_nothing(make_request, garbage):
    model = ScriptedChatModel("chat", garbage)
    cm = ChatManage.start(make_request(query="original"))
    cm.state.intent = "kb_search"  # whatever was there stays
    assert run(plugin_for(registry(model)), cm)
    assert cm.state.rewrite_query == "original"
    assert cm.state.intent == "kb_search"
    assert cm.state.system_prompt_override == ""


def test_missing_rewrite_template_keeps_the_question(make_request):
    model = ScriptedChatModel("chat", reply(rewrite_query="x"))
    cm = ChatManage.start(make_request(query="original"))
    assert run(plugin_for(registry(model), rewrite_template_id="no-such-template"), cm)
    assert model.calls == []
    assert cm.state.rewrite_query == "original"


# Model choice -------------------------------------------------------------------------------------------------


def test_dedicated_understanding_model_is_preferred(make_request):
    small = ScriptedChatModel("qu-small", reply(rewrite_query="ragline from small model"))
    chat = ScriptedChatModel("chat", reply(rewrite_query="ragline from chat model"))
    cm = ChatManage.start(make_request(chat_model_id="chat"))
    run(plugin_for(registry(chat, small, default="chat"), understand_model_id="qu-small"), cm)
    assert cm.state.rewrite_query == "ragline from small model"
    assert chat.calls == []


def test_missing_understanding_model_falls_back_to_the_request_chat_model(make_request):
    chat = ScriptedChatModel("chat-9", reply(rewrite_query="ragline from chat model"))
    other = ScriptedChatModel("default-model", reply(rewrite_query="ragline from default"))
    cm = ChatManage.start(make_request(chat_model_id="chat-9"))
    run(plugin_for(registry(other, chat, default="default-model"), understand_model_id="qu-gone"), cm)
    assert cm.state.rewrite_query == "ragline from chat model"
    assert other.calls == []


def test_without_a_chat_model_id_the_default_model_answers(make_request):
    default = ScriptedChatModel("default-model", reply(rewrite_query="ragline from default"))
    cm = ChatManage.start(make_request(chat_model_id=""))
    run(plugin_for(registry(default), understand_model_id="qu-gone"), cm)
    assert cm.state.rewrite_query == "ragline from default"


# Images -------------------------------------------------------------------------------------------------------

IMAGES = ("https://cdn.example/receipt.png", "data:image/png;base64,iVBORw0KGgo=")
IMAGE_REPLY = reply(
    rewrite_query="What is the total on this receipt?",
    intent="kb_search",
    image_description="A supermarket receipt.",
    ocr_text="TOTAL 42.00",
)


def test_vision_chat_model_gets_the_images_and_the_larger_budget(make_request):
    chat = ScriptedChatModel("chat", IMAGE_REPLY)
    small = ScriptedChatModel("qu-small", reply(rewrite_query="ragline text only"))
    notes = InMemoryUserMessageNotes()
    cm = ChatManage.start(
        make_request(chat_model_id="chat", chat_model_supports_vision=True, images=IMAGES, user_message_id="u-msg-1")
    )
    run(plugin_for(registry(chat, small), understand_model_id="qu-small", notes=notes), cm)

    assert small.calls == []
    user = chat.messages[-1]
    assert user.images == IMAGES
    assert '<images_attached count="2" />' in user.content
    assert chat.only_options.max_tokens == UNDERSTAND_MAX_TOKENS_WITH_IMAGES == 2048
    assert cm.state.rewrite_query == "What is the total on this receipt?"
    description = "A supermarket receipt.\n\n[OCR]\nTOTAL 42.00"
    assert cm.context.extras[IMAGE_DESCRIPTION_EXTRA] == description
    assert notes.image_descriptions == {("sess-1", "u-msg-1"): description}


def test_without_vision_the_vlm_reads_the_images(make_request):
    chat = ScriptedChatModel("chat", reply(rewrite_query="chat should not be used"))
    vlm = ScriptedChatModel("vlm", IMAGE_REPLY)
    cm = ChatManage.start(make_request(chat_model_id="chat", vlm_model_id="vlm", images=IMAGES[:1]))
    run(plugin_for(registry(chat, vlm)), cm)
    assert chat.calls == []
    assert vlm.messages[-1].images == IMAGES[:1]
    assert vlm.only_options.max_tokens == UNDERSTAND_MAX_TOKENS_WITH_IMAGES
    assert cm.context.extras[IMAGE_DESCRIPTION_EXTRA].startswith("A supermarket receipt.")


def test_unavailable_vision_chat_model_falls_back_to_the_vlm(make_request):
    vlm = ScriptedChatModel("vlm", IMAGE_REPLY)
    cm = ChatManage.start(
        make_request(chat_model_id="gone", chat_model_supports_vision=True, vlm_model_id="vlm", images=IMAGES)
    )
    run(plugin_for(registry(vlm)), cm)
    assert vlm.messages[-1].images == IMAGES


def test_images_no_model_can_see_go_text_only_and_are_not_described(make_request):
    chat = ScriptedChatModel("chat", IMAGE_REPLY)
    notes = InMemoryUserMessageNotes()
    cm = ChatManage.start(make_request(chat_model_id="chat", images=IMAGES, user_message_id="u-msg-1"))
    run(plugin_for(registry(chat), notes=notes), cm)
    user = chat.messages[-1]
    assert user.images == ()
    assert 'visible="false"' in user.content
    assert chat.only_options.max_tokens == UNDERSTAND_MAX_TOKENS
    # A rewrite drawn from images the model never saw is invented: the question is searched as asked.
    assert cm.state.rewrite_query == cm.request.query
    assert IMAGE_DESCRIPTION_EXTRA not in cm.context.extras
    assert notes.image_descriptions == {}


def test_text_only_turns_send_no_images(make_request):
    chat = ScriptedChatModel("chat", reply(rewrite_query="q2"))
    run(plugin_for(registry(chat)), ChatManage.start(make_request(chat_model_supports_vision=True)))
    assert chat.messages[-1].images == ()
    assert "images_attached" not in chat.messages[-1].content


def test_failing_note_store_does_not_fail_the_turn(make_request):
    chat = ScriptedChatModel("chat", IMAGE_REPLY)
    cm = ChatManage.start(
        make_request(chat_model_id="chat", chat_model_supports_vision=True, images=IMAGES, user_message_id="u-1")
    )
    assert run(plugin_for(registry(chat), notes=FailingNotes()), cm)
    assert cm.state.rewrite_query == "What is the total on this receipt?"


def test_description_is_not_stored_without_a_user_message_id(make_request):
    chat = ScriptedChatModel("chat", IMAGE_REPLY)
    notes = InMemoryUserMessageNotes()
    cm = ChatManage.start(make_request(chat_model_id="chat", chat_model_supports_vision=True, images=IMAGES))
    run(plugin_for(registry(chat), notes=notes), cm)
    assert notes.image_descriptions == {}
    assert cm.context.extras[IMAGE_DESCRIPTION_EXTRA]


def test_when_no_image_model_loads_the_text_model_answers_without_images(make_request):
    small = ScriptedChatModel("qu-small", reply(rewrite_query="ragline text path"))
    cm = ChatManage.start(
        make_request(chat_model_id="gone", chat_model_supports_vision=True, vlm_model_id="vlm-gone", images=IMAGES)
    )
    run(plugin_for(registry(small), understand_model_id="qu-small"), cm)
    assert small.messages[-1].images == ()
    assert small.only_options.max_tokens == UNDERSTAND_MAX_TOKENS
    assert cm.state.rewrite_query == "ragline text path"


@pytest.mark.parametrize("echo", ["Conversation so far:", "Latest message:", "The weather in Paris"])
def test_a_rewrite_that_does_not_look_like_the_question_is_ignored_and_logged(make_request, echo, caplog):
    model = ScriptedChatModel("chat", reply(rewrite_query=echo, intent="kb_search"))
    cm = ChatManage.start(make_request(query="How does the reactor cool?"))
    with caplog.at_level("INFO", logger="ragline.pipeline.query_understand"):
        assert run(plugin_for(registry(model)), cm)
    assert cm.state.rewrite_query == "How does the reactor cool?"
    assert cm.search_query == "How does the reactor cool?"
    assert cm.state.intent == "kb_search"  # the rest of the reply still counts
    assert any("rewrite ignored" in r.getMessage() for r in caplog.records)
    assert not any(echo in r.getMessage() for r in caplog.records)  # user content stays out of INFO logs


# Per-request overrides (configuration and question fields reach the request) -------------------------------


def test_the_request_understanding_model_wins_over_the_configured_one(make_request):
    configured = ScriptedChatModel("qu-configured", reply(rewrite_query="ragline from the configured model"))
    asked = ScriptedChatModel("qu-asked", reply(rewrite_query="ragline from the asked model"))
    chat = ScriptedChatModel("chat", reply(rewrite_query="ragline from the chat model"))
    cm = ChatManage.start(make_request(chat_model_id="chat", understand_model_id="qu-asked"))
    run(plugin_for(registry(chat, configured, asked, default="chat"), understand_model_id="qu-configured"), cm)
    assert cm.state.rewrite_query == "ragline from the asked model"
    assert configured.calls == []
    assert chat.calls == []


def test_the_request_rewrite_template_is_used(make_request):
    model = ScriptedChatModel("chat", reply(rewrite_query="x"))
    cm = ChatManage.start(make_request(query="original", rewrite_template_id="no-such-template"))
    assert run(plugin_for(registry(model)), cm)
    assert model.calls == []  # the request's (missing) template was looked up, not the stage's default
    assert cm.state.rewrite_query == "original"


def test_the_request_intent_prompt_wins_over_the_agent_one(make_request):
    model = ScriptedChatModel("chat", reply(rewrite_query="hello", intent="greeting"))
    cm = ChatManage.start(make_request(intent_prompts={"greeting": "Greet in one word."}))
    run(plugin_for(registry(model), agent_intent_prompts={"greeting": "Hi! I am the HR assistant."}), cm)
    assert cm.state.system_prompt_override == "Greet in one word."
