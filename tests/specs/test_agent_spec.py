from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from handrail.dataclasses import ChatMessage, ToolCall
from handrail.errors import ConfigurationError
from handrail.specs import AgentSpec, SpecError, agent_spec_json_schema, build_agent, load_agent_spec
from handrail.testing import ScriptedChatGenerator

ROOT = Path(__file__).resolve().parents[2]


def scripted_generator_yaml(replies: list[ChatMessage]) -> str:
    """A generator block that builds a ScriptedChatGenerator from its serialized replies."""
    params = ScriptedChatGenerator(replies).to_dict()["init_parameters"]
    return "generator:\n  type: handrail.testing.ScriptedChatGenerator\n  init_parameters: " + json.dumps(params)


def write(tmp_path: Path, text: str, name: str = "agent.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_shipped_example_is_valid() -> None:
    spec = load_agent_spec(ROOT / "examples" / "assistant.yaml")
    assert spec.generator.type == "llama_cpp"
    assert spec.tools == ["calculator", "search"]
    assert spec.max_agent_steps >= 2


def test_defaults() -> None:
    spec = AgentSpec.model_validate({})
    assert spec.generator.type == "llama_cpp"
    assert spec.exit_conditions == ["text"]
    assert spec.tools == []


@pytest.mark.parametrize(
    ("text", "line", "field", "fragment"),
    [
        ("tools: [calculator]\nmax_agent_steps: lots\n", 2, "max_agent_steps", "integer"),
        ("tools: [calculator]\nmax_agent_steps: 0\n", 2, "max_agent_steps", "greater than or equal"),
        ("tools: [calculator]\nmax_agent_steps: true\n", 2, "max_agent_steps", "integer"),
        ("tools: [{name: search, top_k: 2.0}]\n", 1, "tools.0.top_k", "integer"),
        ("system_prompt: hi\nsurprise: 1\n", 2, "surprise", "Extra inputs"),
        ("generator:\n  type: openai\n  temperature: 0\n", 3, "generator.temperature", "Extra inputs"),
        ("tools:\n  - calculator\n  - name: search\n    top_k: 99\n", 4, "tools.1.top_k", "less than or equal"),
        ("exit_conditions: []\n", 1, "exit_conditions", "at least 1"),
    ],
)
def test_validation_errors_name_file_line_and_field(
    tmp_path: Path, text: str, line: int, field: str, fragment: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load_agent_spec(path)
    message = str(info.value)
    assert f"{path}:{line}: {field}:" in message
    assert fragment in message
    assert isinstance(info.value, ConfigurationError)


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "tools: [calculator\nsystem_prompt: x\n")
    with pytest.raises(SpecError, match=rf"{path}:\d+: not valid YAML"):
        load_agent_spec(path)


def test_non_mapping_and_missing_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="must be a mapping"):
        load_agent_spec(write(tmp_path, "- a\n- b\n"))
    with pytest.raises(SpecError, match="cannot read"):
        load_agent_spec(tmp_path / "missing.yaml")


def test_dotted_paths_outside_the_allowlist_are_refused_with_the_reason(tmp_path: Path) -> None:
    spec = load_agent_spec(write(tmp_path, "generator:\n  type: handrail.testing.ScriptedChatGenerator\n"
                                           "  init_parameters: {replies: []}\ntools: [os.system]\n"))  # fmt: skip
    with pytest.raises(SpecError, match=r"Refusing to import 'os\.system'.*allowlist"):
        build_agent(spec)


def test_allowed_modules_in_the_file_or_from_the_caller_trust_a_prefix(tmp_path: Path) -> None:
    base = scripted_generator_yaml([ChatMessage.from_assistant("ok")])
    spec = load_agent_spec(write(tmp_path, base + "\ntools: [tests.specs.helpers.shout]\n"))
    with pytest.raises(SpecError, match="allowlist"):
        build_agent(spec)
    agent = build_agent(spec, allowed_modules=["tests.specs"])
    assert [t.name for t in agent.tools] == ["shout"]  # type: ignore[union-attr]
    spec2 = load_agent_spec(write(tmp_path, base + "\ntools: [tests.specs.helpers.shout]\n"
                                            "allowed_modules: [tests.specs.helpers]\n", "b.yaml"))  # fmt: skip
    assert [t.name for t in build_agent(spec2).tools] == ["shout"]  # type: ignore[union-attr]


def test_unknown_generator_type_is_refused(tmp_path: Path) -> None:
    spec = load_agent_spec(write(tmp_path, "generator:\n  type: nonsense\n"))
    with pytest.raises(SpecError, match=r"generator\.type"):
        build_agent(spec)


def test_folder_setting_on_a_non_search_tool_is_refused(tmp_path: Path) -> None:
    text = scripted_generator_yaml([]) + "\ntools:\n  - name: calculator\n    folder: docs\n"
    with pytest.raises(SpecError, match="built-in search tool"):
        build_agent(load_agent_spec(write(tmp_path, text)))


def test_built_agent_runs_with_builtin_tools(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "owls.md").write_text("# Owls\n\nThe snowy owl weighs about 2 kilograms.\n")
    replies = [
        ChatMessage.from_assistant(tool_calls=[ToolCall("search", {"query": "snowy owl weight"}, "c1")]),
        ChatMessage.from_assistant(tool_calls=[ToolCall("calculator", {"expression": "2 * 3"}, "c2")]),
        ChatMessage.from_assistant("Three owls weigh about 6 kg."),
    ]
    text = scripted_generator_yaml(replies) + "\ntools:\n  - calculator\n  - name: search\n    folder: docs\n"
    text += "system_prompt: Be brief.\nmax_agent_steps: 5\n"
    agent = build_agent(load_agent_spec(write(tmp_path, text)), base_dir=tmp_path)
    result = agent.run([ChatMessage.from_user("How much do three snowy owls weigh?")])
    assert result["exit_reason"] == "text"
    tool_results = [m.tool_call_result for m in result["messages"] if m.tool_call_result]
    assert "owls.md" in tool_results[0].result and "2 kilograms" in tool_results[0].result
    assert tool_results[1].result == "6"
    assert result["messages"][0].text == "Be brief."
    assert agent.max_agent_steps == 5


def test_published_json_schema_matches_the_model() -> None:
    published = json.loads((ROOT / "docs" / "agent-file.schema.json").read_text(encoding="utf-8"))
    assert published == agent_spec_json_schema(), "regenerate with: handrail schema > docs/agent-file.schema.json"


def test_json_schema_validates_the_example() -> None:
    import jsonschema
    import yaml

    example: dict[str, Any] = yaml.safe_load((ROOT / "examples" / "assistant.yaml").read_text())
    jsonschema.Draft202012Validator(agent_spec_json_schema()).validate(example)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(agent_spec_json_schema()).validate({"max_agent_steps": "x"})


def test_confirmation_policies_become_strategies(tmp_path: Path) -> None:
    from handrail.human_in_the_loop import AlwaysAskPolicy, AskOncePolicy, BlockingConfirmationStrategy, NeverAskPolicy
    from handrail.specs import RejectingUI

    text = scripted_generator_yaml([]) + "\ntools: [calculator, search]\n"
    text += "confirmation:\n  search: always\n  calculator: never\n  '*': once\n"
    spec = load_agent_spec(write(tmp_path, text))
    strategies = build_agent(spec).confirmation_strategies
    assert isinstance(strategies, dict) and set(strategies) == {"search", "calculator", "*"}
    assert all(isinstance(s, BlockingConfirmationStrategy) for s in strategies.values())
    assert isinstance(strategies["search"].confirmation_policy, AlwaysAskPolicy)
    assert isinstance(strategies["calculator"].confirmation_policy, NeverAskPolicy)
    assert isinstance(strategies["*"].confirmation_policy, AskOncePolicy)
    assert build_agent(spec, approve="all").confirmation_strategies is None
    rejecting = build_agent(spec, approve="none").confirmation_strategies
    assert rejecting is not None and isinstance(rejecting["search"].confirmation_ui, RejectingUI)


def test_confirmation_for_an_unknown_tool_is_refused(tmp_path: Path) -> None:
    text = scripted_generator_yaml([]) + "\ntools: [calculator]\nconfirmation:\n  search: always\n"
    with pytest.raises(SpecError, match="not tools of this agent"):
        build_agent(load_agent_spec(write(tmp_path, text)))


def test_bad_policy_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "tools: [calculator]\nconfirmation:\n  calculator: sometimes\n")
    with pytest.raises(SpecError, match=rf"{path}:3: confirmation\.calculator:"):
        load_agent_spec(path)


@pytest.mark.parametrize(
    "generator_block",
    [
        # a handrail helper that would import whatever its data names
        "generator:\n  type: handrail.core.serialization.object_from_dict\n"
        "  init_parameters: {data: {type: subprocess.Popen, init_parameters: {args: [touch, MARKER]}}}\n",
        # a handrail class whose from_dict rebuilds nested objects by dotted path
        "generator:\n  type: handrail.human_in_the_loop.strategies.BlockingConfirmationStrategy\n"
        "  init_parameters:\n"
        "    confirmation_policy: {type: subprocess.Popen, init_parameters: {args: [touch, MARKER]}}\n"
        "    confirmation_ui:\n"
        "      {type: handrail.human_in_the_loop.user_interfaces.SimpleConsoleUI, init_parameters: {}}\n",
    ],
)
def test_files_cannot_reach_modules_outside_the_allowlist_through_handrail(
    tmp_path: Path, generator_block: str
) -> None:
    marker = tmp_path / "PWNED"
    path = write(tmp_path, generator_block.replace("MARKER", str(marker)) + "tools: [calculator]\n")
    with pytest.raises(SpecError):
        build_agent(load_agent_spec(path))
    assert not marker.exists()


def test_handrail_functions_cannot_become_tools(tmp_path: Path) -> None:
    path = write(tmp_path, scripted_generator_yaml([]) + "\ntools: [handrail.core.serialization.object_from_dict]\n")
    with pytest.raises(SpecError, match="cannot be made a tool"):
        build_agent(load_agent_spec(path))


def test_unknown_builtin_names_say_what_exists(tmp_path: Path) -> None:
    path = write(tmp_path, scripted_generator_yaml([]) + "\ntools: [websearch]\n")
    with pytest.raises(SpecError, match=r"'websearch' is not a built-in tool \(calculator, search\)"):
        build_agent(load_agent_spec(path))


@pytest.mark.parametrize(
    ("body", "line", "fragment"),
    [
        ("tools:\n  - calculator\n  - serch\n", 3, "tools.1: 'serch' is not a built-in tool"),
        ("tools: [calculator]\nconfirmation:\n  calculator: always\n  serach: never\n", 4, "['serach'] are not tools"),
        ("tools: [calculator]\ngenerator:\n  type: json.JSONDecoder\n", 3, "generator.type: Refusing to import"),
        ("generator:\n  type: handrail.components.agents.Agent\n", 2, "is not a chat generator class"),
    ],
)
def test_errors_found_while_building_name_the_file_and_line(
    tmp_path: Path, body: str, line: int, fragment: str
) -> None:
    path = write(tmp_path, body)
    with pytest.raises(SpecError) as info:
        build_agent(load_agent_spec(path), approve="all")
    assert str(info.value).startswith(f"{path}:{line}: "), str(info.value)
    assert fragment in str(info.value)


def test_a_module_whose_own_import_fails_is_reported_as_such(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "brokentools.py").write_text(
        "import not_installed_anywhere_xyz\n\ndef t(x: str) -> str:\n    return x\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    path = write(tmp_path, scripted_generator_yaml([]) + "\ntools: [brokentools.t]\nallowed_modules: [brokentools]\n")
    with pytest.raises(SpecError, match=r"importing module 'brokentools' failed.*not_installed_anywhere_xyz"):
        build_agent(load_agent_spec(path))


def test_non_utf8_files_are_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_bytes(b"\xff\xfetools: []\n")
    with pytest.raises(SpecError, match="not UTF-8"):
        load_agent_spec(path)


def test_pause_gives_the_asking_tools_a_breakpoint_strategy(tmp_path: Path) -> None:
    from handrail.human_in_the_loop import BlockingConfirmationStrategy, BreakpointConfirmationStrategy, NeverAskPolicy

    text = scripted_generator_yaml([]) + "\ntools: [calculator, search]\n"
    text += "confirmation:\n  search: always\n  calculator: never\n  '*': once\n"
    spec = load_agent_spec(write(tmp_path, text))
    folder = tmp_path / "approvals"
    agent = build_agent(spec, approve="pause", snapshot_dir=folder, snapshot_metadata={"agent_file": "/a.yaml"})
    strategies = agent.confirmation_strategies
    assert isinstance(strategies, dict)
    for name in ("search", "*"):  # 'once' pauses too: what a person confirmed is not kept across processes
        strategy = strategies[name]
        assert isinstance(strategy, BreakpointConfirmationStrategy)
        assert strategy.snapshot_file_path == str(folder) and strategy.metadata == {"agent_file": "/a.yaml"}
    calculator = strategies["calculator"]
    assert isinstance(calculator, BlockingConfirmationStrategy)
    assert isinstance(calculator.confirmation_policy, NeverAskPolicy)
    assert not folder.exists()  # created by the first pause, not by building


def test_pause_into_a_snapshot_store(tmp_path: Path) -> None:
    from handrail.human_in_the_loop import BreakpointConfirmationStrategy
    from handrail.stores import SQLiteSnapshotStore

    text = scripted_generator_yaml([]) + "\ntools: [calculator, search]\n"
    text += "confirmation:\n  search: always\n  calculator: once\n"
    spec = load_agent_spec(write(tmp_path, text))
    store = SQLiteSnapshotStore(tmp_path / "a.db")
    url = f"sqlite:///{tmp_path / 'b.db'}"
    for given in (store, url):
        agent = build_agent(spec, approve="pause", snapshot_store=given, snapshot_metadata={"agent_file": "/a.yaml"})
        strategies = agent.confirmation_strategies
        assert isinstance(strategies, dict)
        for name in ("search", "calculator"):
            strategy = strategies[name]
            assert isinstance(strategy, BreakpointConfirmationStrategy)
            assert strategy.snapshot_store is given and strategy.snapshot_file_path is None
            assert strategy.metadata == {"agent_file": "/a.yaml"}
    assert not (tmp_path / "a.db").exists() and not (tmp_path / "b.db").exists()  # opened on the first pause
    store.close()


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"approve": "pause"}, "needs snapshot_dir"),
        ({"approve": "ask", "snapshot_dir": "d"}, "apply to approve='pause'"),
        ({"approve": "all", "snapshot_metadata": {}}, "apply to approve='pause'"),
        ({"approve": "none", "snapshot_store": "sqlite:///a.db"}, "apply to approve='pause'"),
        ({"approve": "pause", "snapshot_dir": "d", "snapshot_store": "sqlite:///a.db"}, "not both"),
        ({"approve": "pause", "snapshot_store": " "}, "snapshot_store is empty"),
        ({"approve": "pause", "snapshot_store": object()}, "must be a SnapshotStore"),
        ({"approve": "pause", "snapshot_dir": "d", "snapshot_metadata": {"x": object()}}, "JSON-compatible"),
    ],
)
def test_pause_settings_are_checked(tmp_path: Path, kwargs: dict[str, Any], fragment: str) -> None:
    text = scripted_generator_yaml([]) + "\ntools: [calculator]\nconfirmation:\n  calculator: always\n"
    with pytest.raises(SpecError, match=fragment):
        build_agent(load_agent_spec(write(tmp_path, text)), **kwargs)


def reply_with_meta_yaml(meta_value: str) -> str:
    """An agent file whose ScriptedChatGenerator reply has ``meta: {defs: <meta_value>}`` (written as is)."""
    import yaml

    params = ScriptedChatGenerator([ChatMessage.from_assistant("ok", meta={"defs": "PLACEHOLDER"})]).to_dict()
    generator = {"type": "handrail.testing.ScriptedChatGenerator", "init_parameters": params["init_parameters"]}
    text = yaml.safe_dump({"generator": generator}, sort_keys=False)
    assert text.count("PLACEHOLDER") == 1
    return text.replace("PLACEHOLDER", meta_value)


def test_an_alias_bomb_is_refused_naming_the_file_and_line(tmp_path: Path) -> None:
    levels = ["&a0 [" + ", ".join(["lol"] * 10) + "]"]
    levels += [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 8)]  # 10**8 'lol's
    text = reply_with_meta_yaml("[" + ", ".join(levels) + "]")
    path = write(tmp_path, text)
    line = text.splitlines().index(next(row for row in text.splitlines() if "*a0" in row)) + 1
    with pytest.raises(
        SpecError, match=rf"^{path}:{line}: YAML aliases expand this document to more than [\d,]+ nodes"
    ):
        load_agent_spec(path)


def test_anchors_and_aliases_reusing_a_block_still_work(tmp_path: Path) -> None:
    text = reply_with_meta_yaml("[&shared {source: notes, tags: [a, b]}, *shared, *shared]") + (
        "system_prompt: &prompt Be brief.\n"
        "tools:\n"
        "  - &search {name: search, folder: docs, top_k: 5}\n"
        "  - <<: *search\n"
        "    top_k: 2\n"  # a merged key may be overridden
        "  - *search\n"
    )
    spec = load_agent_spec(write(tmp_path, text))
    assert spec.system_prompt == "Be brief."
    reply = spec.generator.init_parameters["replies"][0]["message"]
    assert reply["meta"] == {"defs": [{"source": "notes", "tags": ["a", "b"]}] * 3}
    assert [(t.name, t.folder, t.top_k) for t in spec.tools] == [  # type: ignore[union-attr]
        ("search", "docs", 5),
        ("search", "docs", 2),
        ("search", "docs", 5),
    ]


def test_a_key_given_twice_is_refused_naming_the_file_line_and_key(tmp_path: Path) -> None:
    path = write(tmp_path, "max_agent_steps: 3\nsystem_prompt: hi\nmax_agent_steps: 5\n")
    with pytest.raises(SpecError) as info:
        load_agent_spec(path)
    assert str(info.value) == f"{path}:3: the key 'max_agent_steps' appears twice in one mapping (first on line 1)"


def test_a_nested_key_given_twice_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "generator:\n  type: openai\n  model: a\n  model: b\n")
    with pytest.raises(SpecError, match=rf"^{path}:4: the key 'model' appears twice"):
        load_agent_spec(path)


def test_an_error_in_a_key_that_overrides_a_merge_names_its_own_line(tmp_path: Path) -> None:
    text = "tools:\n  - &search {name: search, top_k: 3}\n  - <<: *search\n    top_k: 99\n"
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load_agent_spec(path)
    assert f"{path}:4: tools.1.top_k:" in str(info.value)


# ---- every failure of building a part is a SpecError at its field (issue 14, item 9) ----------------------


def test_a_generator_without_a_type_is_llama_cpp_and_its_unknown_parameter_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "tools: [calculator]\ngenerator:\n  init_parameters:\n    replies: []\n")
    with pytest.raises(SpecError) as info:
        build_agent(load_agent_spec(path))
    message = str(info.value)
    assert message.startswith(
        f"{path}:4: generator.init_parameters.replies: LlamaCppChatGenerator takes no "
        f"parameter 'replies' (generator.type is not given, so it is llama_cpp"
    ), message
    assert info.value.location == ("generator", "init_parameters", "replies")


@pytest.mark.parametrize(
    ("replies", "fragment", "path"),
    [
        ("[{message: 5}]", "replies[0].message: ChatMessage data must be a mapping, got int", (0, "message")),
        ("[{message: {role: assistant, content: [{text: [1, 2]}]}}]", "'content[0].text' must be a str, got list",
         (0, "message", "content", 0, "text")),
        ("[{message: {role: [user], content: hi}}]", "ChatMessage 'role' must be a str, got list",
         (0, "message", "role")),
        ("[{message: {role: assistant, content: {}}}]", "'content' must be a str or a list of parts, got dict",
         (0, "message", "content")),
        ("{}", "'replies' must be a list, got dict", ()),
        ("[{chunks: [{content: 5}]}]", "replies[0].chunks[0].content holds int 5", (0, "chunks", 0, "content")),
    ],
)  # fmt: skip
def test_scripted_replies_of_the_wrong_type_name_the_reply(
    tmp_path: Path, replies: str, fragment: str, path: tuple[str | int, ...]
) -> None:
    text = f"generator:\n  type: handrail.testing.ScriptedChatGenerator\n  init_parameters:\n    replies: {replies}\n"
    file = write(tmp_path, text)
    with pytest.raises(SpecError) as info:
        build_agent(load_agent_spec(file))
    location = ("generator", "init_parameters", "replies", *path)
    assert str(info.value).startswith(f"{file}:4: {'.'.join(map(str, location))}: "), str(info.value)
    assert fragment in str(info.value)
    assert info.value.location == location


_CALL_REPLY = """generator:
  type: handrail.testing.ScriptedChatGenerator
  init_parameters:
    replies:
      - message: {role: assistant, content: hi}
      - message:
          role: assistant
          content:
            - text: thinking
            - tool_call: {tool_name: search, arguments: {}, id: c1}
"""


@pytest.mark.parametrize(
    ("old", "new", "line", "path", "fragment"),
    [
        ("id: c1", "id: [1]", 10, (1, "message", "content", 1, "tool_call", "id"), "must be a str or None, got list"),
        ("tool_name: search", "tool_name: 5", 10, (1, "message", "content", 1, "tool_call", "tool_name"),
         "must be a str, got int"),
        ("id: c1", "id: c1, bogus: 5", 10, (1, "message", "content", 1, "tool_call", "bogus"),
         "is not a known key (unknown: ['bogus'])"),
        ("- text: thinking", "- {text: thinking, bogus: 5}", 9, (1, "message", "content", 0, "bogus"),
         "is not a known key"),
        ("          role: assistant\n", "          role: assistant\n          bogus: 5\n", 8, (1, "message", "bogus"),
         "is not a known key"),
        ("      - message: {role: assistant, content: hi}",
         "      - {message: {role: assistant, content: hi}, bogus: 5}",
         5, (0, "bogus"), "has unknown keys ['bogus']"),
        ("      - message: {role: assistant, content: hi}", "      - {exception: {type: x}, text: t}", 5,
         (0, "exception"), "Cannot import {'type': 'x'}"),
        ("- tool_call: {tool_name: search, arguments: {}, id: c1}",
         "- tool_call_result: {result: r, error: false, zz: 1, origin: {tool_name: s, arguments: {}}}", 10,
         (1, "message", "content", 1, "tool_call_result", "zz"), "is not a known key"),
    ],
)  # fmt: skip
def test_a_scripted_reply_error_names_its_field_and_line_and_unknown_keys_are_refused(
    tmp_path: Path, old: str, new: str, line: int, path: tuple[str | int, ...], fragment: str
) -> None:
    assert old in _CALL_REPLY
    file = write(tmp_path, _CALL_REPLY.replace(old, new))
    with pytest.raises(SpecError) as info:
        build_agent(load_agent_spec(file))
    location = ("generator", "init_parameters", "replies", *path)
    assert info.value.location == location
    assert str(info.value).startswith(f"{file}:{line}: {'.'.join(map(str, location))}: "), str(info.value)
    assert fragment in str(info.value)


def test_whatever_a_users_generator_raises_while_built_is_a_spec_error_chained(tmp_path: Path) -> None:
    text = "allowed_modules: [tests.specs.helpers]\ngenerator:\n  type: tests.specs.helpers.NeedsReplies\n"
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as info:
        build_agent(load_agent_spec(path))
    assert str(info.value) == f"{path}:2: generator: NeedsReplies cannot be built from this file: KeyError: 'replies'"
    assert isinstance(info.value.__cause__, KeyError)


def test_a_users_generator_that_exits_while_built_is_a_spec_error_but_ctrl_c_passes(tmp_path: Path) -> None:
    text = "allowed_modules: [tests.specs.helpers]\ngenerator:\n  type: tests.specs.helpers.Exits\n"
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as info:
        build_agent(load_agent_spec(path))
    assert str(info.value) == f"{path}:2: generator: Exits cannot be built from this file: SystemExit: 3"
    assert isinstance(info.value.__cause__, SystemExit)
    with pytest.raises(KeyboardInterrupt):
        build_agent(load_agent_spec(write(tmp_path, text.replace("Exits", "Interrupted"))))


@pytest.mark.parametrize(
    ("body", "line", "fragment"),
    [
        ("generator:\n  model: small\n  init_parameters:\n    n_ctx: 2\n", 4, "generator.init_parameters.n_ctx: "),
        ("generator:\n  generation_kwargs: {max_tokens: 5, surprise: 1}\n", 2, "generator.generation_kwargs: "),
        ("generator:\n  init_parameters: {model: small}\n", 2, "generator.init_parameters.model: give it as"),
        ("tools:\n  - calculator\n  - search\n  - calculator\n", 4, "tools.2: a second tool named 'calculator'"),
        ("tools:\n  - name: search\n    folder: missing\n", 3, "tools.0.folder: the tool 'search' cannot be built"),
        ("exit_conditions: ['']\n", 1, "exit_conditions: the agent cannot be built"),
    ],
)
def test_a_part_that_refuses_its_settings_names_the_setting(
    tmp_path: Path, body: str, line: int, fragment: str
) -> None:
    path = write(tmp_path, body)
    with pytest.raises(SpecError) as info:
        build_agent(load_agent_spec(path), approve="all")
    assert str(info.value).startswith(f"{path}:{line}: {fragment}"), str(info.value)


def test_an_int_of_more_digits_than_python_builds_names_the_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "tools: [calculator]\nmax_agent_steps: " + "9" * 5000 + "\n")
    with pytest.raises(SpecError, match=rf"{path}:2: an integer of 5,000 characters is refused"):
        load_agent_spec(path)


def test_a_scripted_call_id_a_person_cannot_type_back_names_the_file_and_line(tmp_path: Path) -> None:
    call = {"tool_call": {"tool_name": "calculator", "arguments": {}, "id": "c1\x1b[31m\n"}}
    reply = json.dumps({"message": {"role": "assistant", "content": [call]}})
    head = "generator:\n  type: handrail.testing.ScriptedChatGenerator\n  init_parameters:\n    replies:\n"
    text = f"{head}      - {reply}\n"
    path = write(tmp_path, text + "tools: [calculator]\n")
    with pytest.raises(SpecError, match=rf"{path}:\d+: .*is refused: it holds the unprintable character U\+001B"):
        build_agent(load_agent_spec(path))


@pytest.mark.parametrize(
    ("setting", "fragment"),
    [
        ("verbose: 'false'", r":4: generator\.init_parameters\.verbose: .*'verbose': expected true or false, got a"),
        ("retries: '3'", r":4: generator\.init_parameters\.retries: .*'retries': expected an integer, got a string"),
        ("retries: true", r":4: generator\.init_parameters\.retries: .*'retries': expected an integer, got a boolean"),
    ],
)  # fmt: skip
def test_a_generator_setting_of_the_wrong_scalar_type_is_refused_at_its_line(
    tmp_path: Path, setting: str, fragment: str
) -> None:
    text = f"generator:\n  type: tests.specs.helpers.Flagged\n  init_parameters:\n    {setting}\ntools: [calculator]\n"
    with pytest.raises(SpecError, match=fragment):
        build_agent(load_agent_spec(write(tmp_path, text)), allowed_modules=["tests.specs"])


def test_a_tool_named_with_a_space_is_configured_and_run_from_a_file(tmp_path: Path) -> None:
    call = ToolCall(tool_name="Addition tool", arguments={"a": 1, "b": 2}, id="c1")
    replies = [ChatMessage.from_assistant(tool_calls=[call]), ChatMessage.from_assistant("done")]
    text = scripted_generator_yaml(replies) + "\ntools: [tests.specs.helpers.addition]\n"
    text += "allowed_modules: [tests.specs.helpers]\nconfirmation:\n  Addition tool: always\n"
    spec = load_agent_spec(write(tmp_path, text))
    agent = build_agent(spec, approve="none")
    assert agent.confirmation_strategies is not None and set(agent.confirmation_strategies) == {"Addition tool"}
    rejected = agent.run([ChatMessage.from_user("1+2?")])["messages"][2].tool_call_result
    assert rejected is not None and rejected.error and "'Addition tool'" in rejected.result
    result = build_agent(spec, approve="all").run([ChatMessage.from_user("1+2?")])
    assert result["messages"][2].tool_call_result.result == "3"
    assert result["tool_call_counts"] == {"Addition tool": 1}
