"""The scripted models for AgentPool: pydantic-ai FunctionModels that agentpool imports
(`model.MAIN`, `model.CHILD`; launch.sh puts this folder on PYTHONPATH).

The scenario comes from the prompt itself (`SCENARIO:<name>`), the child's task from
`SUBAGENT:<tag>`. The main agent delegates with `task {agent_or_team, prompt, description}`
to the agent named after the tag; a child lists the project with `list_directory`. Standard
library plus what agentpool brings.
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "standin"))

from delegation import Call, Conversation, Result, Script, Text  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel  # noqa: E402


class AgentPool(Script):
    spawn_tool = "task"

    def spawn(self, tag, background):
        return Call("task", {"agent_or_team": tag, "prompt": self.task(tag),
                             "description": f"Survey text files ({tag})"})

    def child_tool(self, tag, conv):
        return Call("list_directory", {"path": "."})


def _user_text(content):
    if isinstance(content, str):
        return content
    return "".join(c for c in content if isinstance(c, str))


def conversation(messages, info: AgentInfo):
    user_texts, calls, results, system = [], [], [], []
    names = {}
    for m in messages:
        if isinstance(m, ModelRequest):
            for p in m.parts:
                if isinstance(p, SystemPromptPart):
                    system.append(p.content)
                elif isinstance(p, UserPromptPart):
                    user_texts.append(_user_text(p.content))
                elif isinstance(p, ToolReturnPart):
                    results.append(Result(p.tool_call_id, p.tool_name, p.model_response_str()))
                elif isinstance(p, RetryPromptPart):
                    results.append(Result(p.tool_call_id, p.tool_name, p.model_response()))
        elif isinstance(m, ModelResponse):
            for p in m.parts:
                if isinstance(p, ToolCallPart):
                    calls.append((p.tool_call_id, p.tool_name, p.args_as_dict()))
                    names[p.tool_call_id] = p.tool_name
    tools = [t.name for t in info.function_tools]
    return Conversation(user_texts, calls, results, tools, side=False, system="\n".join(system))


def _scenario(conv):
    return conv.tag if conv.role == "main" and conv.tag in ("one", "two", "background") else "one"


def _items(messages, info):
    conv = conversation(messages, info)
    items = AgentPool(_scenario(conv)).reply(conv)
    print(f"agentpool-model: role={conv.role} tag={conv.tag} results={len(conv.results)} "
          f"-> {items!r}", file=sys.stderr)
    return items


async def _stream(messages, info):
    index = 0
    for item in _items(messages, info):
        if isinstance(item, Text):
            for word in re.findall(r"\S+\s*", item.text) or [item.text]:
                yield word
        elif isinstance(item, Call):
            yield {index: DeltaToolCall(name=item.name, json_args=json.dumps(item.args),
                                        tool_call_id=item.id)}
            index += 1


def _whole(messages, info):
    parts = []
    for item in _items(messages, info):
        if isinstance(item, Text):
            parts.append(TextPart(item.text))
        elif isinstance(item, Call):
            parts.append(ToolCallPart(item.name, item.args, tool_call_id=item.id))
    return ModelResponse(parts=parts)


MAIN = FunctionModel(_whole, stream_function=_stream, model_name="scripted-main")
CHILD = FunctionModel(_whole, stream_function=_stream, model_name="scripted-child")
