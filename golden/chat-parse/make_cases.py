import json
MA = "Hello, world!\nWhat's up?"
TH = "I'm\nthinking"
SF = ("special_function", '{"arg1": 1}')
DSCB = "<｜tool▁calls▁begin｜>"; DSCE = "<｜tool▁calls▁end｜>"; DCB = "<｜tool▁call▁begin｜>"; DCE = "<｜tool▁call▁end｜>"; DSEP = "<｜tool▁sep｜>"
cases = []
# test-chat.cpp's tool definitions (special_function_tool, special_function_tool_with_optional_param,
# python_tool) in OpenAI's shape, for the cases whose parse depends on the parameter types
def tool(name, props):
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": props}}}
SPECIAL = tool("special_function", {"arg1": {"type": "integer"}})
SPECIAL_OPT = tool("special_function_with_opt", {"arg1": {"type": "integer"}, "arg2": {"type": "integer"}})
PYTHON = tool("python", {"code": {"type": "string"}})
def case(line, tmpl, inp, content="", reasoning="", calls=(), rf="none", tools=False, think=True, partial=False):
    cases.append({"source": "tests/test-chat.cpp:%d" % line, "template": tmpl, "input": inp,
                  "reasoning_format": rf, "enable_thinking": think,
                  "tools": [SPECIAL, SPECIAL_OPT, PYTHON] if tools else False, "partial": partial,
                  "expect": {"content": content, "reasoning_content": reasoning,
                             "tool_calls": [{"name": c[0], "arguments": c[1], "id": c[2] if len(c) > 2 else ""} for c in calls]}})
# Qwen3.5 (reasoning only: its tool calls use the Qwen3-Coder XML form)
case(2115, "Qwen3.5-4B", "I'm\nthinking\n</think>\n\n" + MA, MA, TH, rf="auto")
case(2121, "Qwen3.5-4B", "I'm\nthinking\n</think>\n\n" + MA, "<think>\nI'm\nthinking\n</think>\n\n" + MA)
# Nemotron 3 Nano (reasoning only)
case(2664, "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", MA, MA, rf="auto", think=False)
case(2669, "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "I'm\nthinking\n</think>\n" + MA, "<think>\nI'm\nthinking\n</think>\n" + MA)
case(2675, "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "I'm\nthinking\n</think>\n" + MA, MA, TH, rf="auto")
# Command R7B
R7 = "CohereForAI-c4ai-command-r7b-12-2024-tool_use"
ACT = "<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"special_function\", \"parameters\": {\"arg1\": 1}}\n]<|END_ACTION|>"
case(2787, R7, "<|START_RESPONSE|>" + MA + "<|END_RESPONSE|>", MA)
case(2789, R7, "<|START_THINKING|>I'm\nthinking<|END_THINKING|><|START_RESPONSE|>" + MA + "<|END_RESPONSE|>", MA, TH, rf="deepseek")
case(2796, R7, "<|START_THINKING|>I'm\nthinking<|END_THINKING|><|START_RESPONSE|>" + MA + "<|END_RESPONSE|>",
     "<|START_THINKING|>I'm\nthinking<|END_THINKING|>" + MA)
case(2802, R7, "<|START_THINKING|>I'm\nthinking<|END_THINKING|>" + ACT, "", TH, [("special_function", '{"arg1": 1}', "0")], rf="deepseek", tools=True)
case(2822, R7, "<|START_THINKING|><|END_THINKING|>" + ACT, "", "", [("special_function", '{"arg1":1}', "0")], rf="deepseek", tools=True)
# gemma 2 (content only)
case(2942, "google-gemma-2-2b-it", "Hello, world!", "Hello, world!")
# QwQ (the prompt opens <think>)
case(3244, "Qwen-QwQ-32B", "Let me think about this...\n</think>\nThe answer is 42.", "The answer is 42.", "Let me think about this...", rf="auto")
case(3250, "Qwen-QwQ-32B", "</think>Hello, world!", "Hello, world!", rf="auto")
# Hermes 2 Pro
H2 = "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use"
case(3277, H2, "<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}</tool_call>", "", "", [SF], tools=True)
case(3285, H2, MA + "<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}</tool_call>", MA, "", [("special_function", '{"arg1":1}')], tools=True)
case(3308, "google-gemma-2-2b-it", MA, MA)
# Granite
G3 = "ibm-granite-granite-3.3-2B-Instruct"
case(3314, G3, MA, MA)
case(3316, G3, "<think>I'm\nthinking</think>" + MA, MA, TH, rf="deepseek")
TC = "<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</tool_call>"
for line, g in ((3354, "ibm-granite-granite-4.0"), (3377, "ibm-granite-granite-4.1")):
    case(line, g, MA, MA)
    case(line + 2, g, TC, "", "", [SF], tools=True)
# DeepSeek V3.1
V31 = "deepseek-ai-DeepSeek-V3.1"
case(3825, V31, DSCB + DCB + "get_time" + DSEP + "{\"city\": \"XYZCITY\"}" + DCE + DSCE, "", "", [("get_time", '{"city":"XYZCITY"}')], rf="deepseek", tools=True, think=False)
case(3858, V31, "REASONING</think>" + DSCB + DCB + "get_time" + DSEP + "{\"city\": \"Tokyo\"}" + DCE + DSCE, "", "REASONING", [("get_time", '{"city":"Tokyo"}')], rf="deepseek", tools=True)
case(3870, V31, "REASONING</think>CONTENT" + DSCB + DCB + "get_time" + DSEP + "{\"city\": \"Paris\"}" + DCE + DCB + "get_weather" + DSEP + "{\"city\": \"Paris\"}" + DCE + DSCE,
     "CONTENT", "REASONING", [("get_time", '{"city":"Paris"}'), ("get_weather", '{"city":"Paris"}')], rf="deepseek", tools=True)
case(3888, V31, "REASONING</think>\nCONTENT", "CONTENT", "REASONING\n", rf="deepseek")
case(3897, V31, "CONTENT", "CONTENT", rf="deepseek", think=False)
# Mistral Nemo
MN = "mistralai-Mistral-Nemo-Instruct-2407"
case(5409, MN, MA, MA)
case(5410, MN, "[TOOL_CALLS][{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}, \"id\": \"123456789\"}]", "", "", [("special_function", '{"arg1":1}', "123456789")], tools=True)
# Functionary
F31 = "meetkai-functionary-medium-v3.1"
case(5426, F31, MA, MA)
case(5427, F31, "<function=special_function>{\"arg1\": 1}</function>", "", "", [SF], tools=True)
F32 = "meetkai-functionary-medium-v3.2"
case(5444, F32, "all\n" + MA, MA)
case(5445, F32, "special_function\n{\"arg1\": 1}", "", "", [SF], tools=True)
FF = "fireworks-ai-llama-3-firefunction-v2"
case(5463, FF, MA, MA)
case(5464, FF, " functools[{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}]", "", "", [SF], tools=True)
# DeepSeek R1 family (the prompt opens <think>)
for line, t in ((5483, "deepseek-ai-DeepSeek-R1-Distill-Llama-8B"), (5517, "llama-cpp-deepseek-r1"), (5556, "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B")):
    case(line, t, "</think>" + MA, MA, rf="deepseek")
    case(line + (4 if line == 5483 else 1 if line == 5517 else 3), t, "I'm\nthinking</think>" + MA, MA, TH, rf="deepseek")
R1CALL = DCB + "function" + DSEP + "special_function\n```json\n{\"arg1\": 1}```" + DCE + DSCE
case(5522, "llama-cpp-deepseek-r1", "</think>" + DSCB + R1CALL, "", "", [SF], rf="deepseek", tools=True)
case(5563, "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", DSCB + R1CALL, "", "", [SF], rf="deepseek", tools=True, think=False)
# MiMo-VL / Hermes 3 / Qwen 2.5
for t in ("MiMo-VL", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "Qwen-Qwen2.5-7B-Instruct"):
    case(5599, t, MA, MA)
    case(5600, t, TC, "", "", [SF], tools=True)
# Mistral Small 3.2
MS = "Mistral-Small-3.2-24B-Instruct-2506"
case(5746, MS, MA, MA)
case(5747, MS, "[TOOL_CALLS]special_function[CALL_ID]123456789[ARGS]{\"arg1\": 1}", "", "", [("special_function", '{"arg1":1}', "123456789")], tools=True)
case(5753, MS, "[TOOL_CALLS]special_function[CALL_ID]000000001[ARGS]{\"arg1\": 1}[TOOL_CALLS]special_function_with_opt[CALL_ID]000000002[ARGS]{\"arg1\": 1, \"arg2\": 2}",
     "", "", [("special_function", '{"arg1": 1}', "000000001"), ("special_function_with_opt", '{"arg1": 1, "arg2": 2}', "000000002")], tools=True)
DV = "unsloth-mistral-Devstral-Small-2507"
case(5777, DV, MA, MA)
case(5778, DV, "[TOOL_CALLS]special_function[ARGS]{\"arg1\": 1}", "", "", [SF], tools=True)
case(5783, DV, MA + "[TOOL_CALLS]special_function[ARGS]{\"arg1\": 1}", MA, "", [("special_function", '{"arg1":1}')], tools=True)
# Llama 3.x
case(5793, "meta-llama-Llama-3.1-8B-Instruct", MA, MA, tools=True)
case(5821, "meta-llama-Llama-3.2-3B-Instruct", MA, MA, tools=True)
case(5835, "meta-llama-Llama-3.3-70B-Instruct", MA, MA, tools=True)
# gpt-oss
GO = "openai-gpt-oss-120b"
AN = "<|channel|>analysis<|message|>I'm\nthinking<|end|>"
case(5851, GO, "<|channel|>final<|message|>" + MA, MA)
case(5854, GO, "<|channel|>commentary<|message|>" + MA, MA)
case(5857, GO, AN + "<|start|>assistant<|channel|>final<|message|>" + MA, MA, TH, rf="auto")
case(5865, GO, AN + "<|start|>assistant<|channel|>final<|message|>" + MA, AN + MA)
case(5873, GO, "<|channel|>analysis<|message|>I'm\nthinking", "", TH, rf="auto", partial=True)
case(5880, GO, " to=functions.special_function<|channel|>analysis<|message|>{\"arg1\": 1}", "", "", [SF], rf="auto", tools=True)
case(5887, GO, "<|channel|>analysis to=functions.special_function<|message|>{\"arg1\": 1}", "", "", [SF], rf="auto", tools=True)
case(5894, GO, " to=functions.special_function<|channel|>analysis <|constrain|>json<|message|>{\"arg1\": 1}", "", "", [SF], rf="auto", tools=True)
case(5901, GO, "<|channel|>commentary to=functions.special_function<|message|>{\"arg1\": 1}", "", "", [SF], rf="auto", tools=True)
case(5908, GO, AN + "<|start|>assistant to=functions.special_function<|channel|>analysis<|message|>{\"arg1\": 1}", "", TH, [("special_function", '{"arg1":1}')], rf="auto", tools=True)
case(5917, GO, "<|channel|>analysis<|message|>Thinking about edit...<|end|><|start|>assistant<|channel|>commentary to=functions.edit <|constrain|>json<|message|>{\"oldString\": \"if (part < railCount - 1) {\", \"newString\": \"if (part < 4) {\", \"replaceAll\": false}",
     "", "Thinking about edit...", [("edit", '{"oldString": "if (part < railCount - 1) {", "newString": "if (part < 4) {", "replaceAll": false}')], rf="auto", tools=True)
case(5954, GO, "<|channel|>analysis<|message|>I need to output the invoice details in JSON<|end|><|start|>assistant<|channel|>final <|constrain|>json<|message|>{\"amount\": 123.45, \"date\": \"2025-12-03\"}",
     "{\"amount\": 123.45, \"date\": \"2025-12-03\"}", "I need to output the invoice details in JSON", rf="auto")
case(5970, GO, "<|channel|>analysis<|message|>I will execute python to say hello<|end|><|start|>assistant to=container.exec<|channel|>commentary<|message|>python3 -c 'print(\"hello\")'",
     "", "I will execute python to say hello", rf="auto")
case(5979, GO, "<|channel|>analysis<|message|>I will execute python to say hello<|end|><|start|>assistant<|channel|>commentary to=python <|constrain|>code<|message|>print(\"hello\")",
     "", "I will execute python to say hello", rf="auto")
case(5990, GO, "<|channel|>commentary to=assistant" + AN + "<|start|>assistant<|channel|>final<|message|>" + MA, MA, TH, rf="auto")
case(5998, GO, AN + "<|start|>assistant<|channel|>commentary to=assistant<|channel|>final<|message|>" + MA, MA, TH, rf="auto")
# Qwen3-Coder's XML calls (Qwen3.5, Qwen3-Coder)
XC = "<tool_call>\n<function=special_function>\n<parameter=arg1>\n1\n</parameter>\n</function>\n</tool_call>"
XC2 = "<tool_call>\n<function=special_function_with_opt>\n<parameter=arg1>\n1\n</parameter>\n<parameter=arg2>\n2\n</parameter>\n</function>\n</tool_call>"
case(2127, "Qwen3.5-4B", XC, "", "", [SF], rf="auto", tools=True, think=False)
case(2139, "Qwen3.5-4B", "I'm\nthinking\n</think>\n\n" + XC, "", TH, [("special_function", '{"arg1":1}')], rf="auto", tools=True)
case(2151, "Qwen3.5-4B", XC + "\n" + XC2, "", "", [SF, ("special_function_with_opt", '{"arg1": 1, "arg2": 2}')], rf="auto", tools=True, think=False)
QC = "Qwen3-Coder"
XCN = "<tool_call>\n<function=special_function>\n<parameter=arg1>\n1\n</parameter>\n</function>\n</tool_call>"
case(3499, QC, MA, MA)
case(3501, QC, XCN, "", "", [SF], tools=True)
case(3515, QC, XCN[len("<tool_call>\n"):], "", "", [SF], tools=True)
case(3526, QC, "Let me call it.\n" + XCN[len("<tool_call>\n"):], "Let me call it.\n", "", [SF], tools=True)
case(3542, QC, XCN[len("<tool_call>\n"):] + "\n" + XC2, "", "", [SF, ("special_function_with_opt", '{"arg1": 1, "arg2": 2}')], tools=True)
case(3569, QC, XCN + "\n" + XC2, "", "", [SF, ("special_function_with_opt", '{"arg1": 1, "arg2": 2}')], tools=True)
case(3599, QC, "<tool_call>\n<function=python>\n<parameter=code>\ndef hello():\n    print(\"Hello, world!\")\n\nhello()\n</parameter>\n</function>\n</tool_call>",
     "", "", [("python", "{\"code\": \"def hello():\\n    print(\\\"Hello, world!\\\")\\n\\nhello()\"}")], tools=True)
case(3620, QC, "<tool_call>\n<function=python>\n<parameter=code>\n\u683c\n</parameter>\n</function>\n</tool_call>",
     "", "", [("python", "{\"code\": \"\u683c\"}")], tools=True)
# Ministral 3 Reasoning ([THINK] thoughts, NAME[ARGS] calls)
MR = "mistralai-Ministral-3-14B-Reasoning-2512"
case(2569, MR, MA, MA)
case(2571, MR, "[THINK]I'm\nthinking[/THINK]" + MA, "[THINK]I'm\nthinking[/THINK]" + MA)
case(2576, MR, "[THINK]I'm\nthinking[/THINK]" + MA, MA, TH, rf="auto")
case(2583, MR, '[TOOL_CALLS]special_function[ARGS]{"arg1":1}', "", "", [SF], rf="auto", tools=True)
case(2590, MR, "[THINK]I'm\nthinking[/THINK]" + '[TOOL_CALLS]special_function[ARGS]{"arg1":1}', "", TH, [("special_function", '{"arg1":1}')], rf="auto", tools=True)
case(2599, MR, '[TOOL_CALLS]special_function[ARGS]{"arg1": 1}[TOOL_CALLS]special_function_with_opt[ARGS]{"arg1": 1, "arg2": 2}',
     "", "", [SF, ("special_function_with_opt", '{"arg1": 1, "arg2": 2}')], rf="auto", tools=True)
# Command R+ (Action: with a JSON code block)
RP = "CohereForAI-c4ai-command-r-plus-tool_use"
case(5386, RP, "<|CHATBOT_TOKEN|>" + MA + "<|END_OF_TURN_TOKEN|>", MA)
case(5388, RP, 'Action:\n```json\n[{"tool_name": "special_function", "parameters": {"arg1": 1}}]\n```', "", "", [SF], tools=True)
json.dump(cases, open("cases.json", "w"), ensure_ascii=False, indent=1)
print(len(cases))
