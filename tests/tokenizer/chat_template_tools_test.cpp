// SPDX-License-Identifier: Apache-2.0
// tests/tokenizer/chat_template_tools_test.cpp: the built-in templates with tools and tool
// turns. Qwen3 and Gemma 4 expectations are the models' own Jinja templates (Qwen3's
// chat_template of the fixture tokenizer_config.json, Gemma 4's chat_template.jinja)
// rendered with jinja2 3.1 as transformers renders them (trim_blocks, lstrip_blocks, tojson =
// json.dumps(ensure_ascii=False), bos_token ""), with the calls' arguments as mappings (as
// vLLM and llama.cpp pass them). Qwen3.5 (XML calls) and GLM (arg_key calls) are rendered the
// same way from the templates docs/models/qwen35.md and docs/models/glm-ocr.md name.
#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

namespace tdm::test {
namespace {

const std::vector<ToolDefinition> kTools = {
    {"get_weather",
     R"({"name": "get_weather", "description": "Weather at a place.", "parameters": {"type": "object", )"
     R"("properties": {"location": {"type": "string", "description": "City"}, "unit": {"type": "string", "enum": )"
     R"(["c", "f"]}}, "required": ["location"]}})"},
    {"get_time",
     R"({"name":"get_time","description":"Local time.","parameters":{"type":"object","properties":{"tz":{"type":)"
     R"("string"},"days":{"type":"integer"}}}})"},
};

const std::vector<ChatMessage> kSystemUser = {{"system", "Be brief."}, {"user", "Weather in Paris?"}};

std::vector<ChatMessage> history() {
    std::vector<ChatMessage> m = {{"user", "Weather in Paris and the time?"}, {"assistant", ""}};
    m[1].tool_calls = {{"call_1", "get_weather", R"({"location": "Paris", "unit": "c"})"},
                       {"call_2", "get_time", R"({"tz":"CET","days":2})"}};
    ChatMessage r1{"tool", R"({"temp": 21})"};
    r1.tool_call_id = "call_1";
    ChatMessage r2{"tool", "10:00"};
    r2.tool_call_id = "call_2";
    m.push_back(r1);
    m.push_back(r2);
    return m;
}

std::vector<ChatMessage> history2() {
    auto m = history();
    m.push_back({"assistant", "21 C, 10:00."});
    m.push_back({"user", "Thanks"});
    return m;
}

std::string render(std::string_view name, const std::vector<ChatMessage>& messages,
                   const std::vector<ToolDefinition>& tools = kTools) {
    auto t = ChatTemplate::builtin(name);
    EXPECT_TRUE(t.ok());
    auto out = t->apply(messages, /*add_generation_prompt=*/true, tools);
    EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message());
    return out.ok() ? *out : std::string();
}

// Rendered by the models' templates (see the file comment).
const char* const k_qwen3_sys_user =
    "<|im_start|>system\n"
    "Be brief.\n"
    "\n"
    "# Tools\n"
    "\n"
    "You may call one or more functions to assist with the user query.\n"
    "\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n"
    "<tools>\n"
    "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather at a place"
    ".\", \"parameters\": {\"type\": \"object\", \"properties\": {\"location\": {\"type\": \"string\", \"descrip"
    "tion\": \"City\"}, \"unit\": {\"type\": \"string\", \"enum\": [\"c\", \"f\"]}}, \"required\": [\"location\"]}}"
    "}\n"
    "{\"type\": \"function\", \"function\": {\"name\": \"get_time\", \"description\": \"Local time.\", \"parame"
    "ters\": {\"type\": \"object\", \"properties\": {\"tz\": {\"type\": \"string\"}, \"days\": {\"type\": \"intege"
    "r\"}}}}}\n"
    "</tools>\n"
    "\n"
    "For each function call, return a json object with function name and arguments within <tool_"
    "call></tool_call> XML tags:\n"
    "<tool_call>\n"
    "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
    "</tool_call><|im_end|>\n"
    "<|im_start|>user\n"
    "Weather in Paris?<|im_end|>\n"
    "<|im_start|>assistant\n";
const char* const k_qwen3_history =
    "<|im_start|>system\n"
    "# Tools\n"
    "\n"
    "You may call one or more functions to assist with the user query.\n"
    "\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n"
    "<tools>\n"
    "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather at a place"
    ".\", \"parameters\": {\"type\": \"object\", \"properties\": {\"location\": {\"type\": \"string\", \"descrip"
    "tion\": \"City\"}, \"unit\": {\"type\": \"string\", \"enum\": [\"c\", \"f\"]}}, \"required\": [\"location\"]}}"
    "}\n"
    "{\"type\": \"function\", \"function\": {\"name\": \"get_time\", \"description\": \"Local time.\", \"parame"
    "ters\": {\"type\": \"object\", \"properties\": {\"tz\": {\"type\": \"string\"}, \"days\": {\"type\": \"intege"
    "r\"}}}}}\n"
    "</tools>\n"
    "\n"
    "For each function call, return a json object with function name and arguments within <tool_"
    "call></tool_call> XML tags:\n"
    "<tool_call>\n"
    "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
    "</tool_call><|im_end|>\n"
    "<|im_start|>user\n"
    "Weather in Paris and the time?<|im_end|>\n"
    "<|im_start|>assistant\n"
    "<tool_call>\n"
    "{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\", \"unit\": \"c\"}}\n"
    "</tool_call>\n"
    "<tool_call>\n"
    "{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\", \"days\": 2}}\n"
    "</tool_call><|im_end|>\n"
    "<|im_start|>user\n"
    "<tool_response>\n"
    "{\"temp\": 21}\n"
    "</tool_response>\n"
    "<tool_response>\n"
    "10:00\n"
    "</tool_response><|im_end|>\n"
    "<|im_start|>assistant\n";
const char* const k_qwen3_history2 =
    "<|im_start|>system\n"
    "# Tools\n"
    "\n"
    "You may call one or more functions to assist with the user query.\n"
    "\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n"
    "<tools>\n"
    "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather at a place"
    ".\", \"parameters\": {\"type\": \"object\", \"properties\": {\"location\": {\"type\": \"string\", \"descrip"
    "tion\": \"City\"}, \"unit\": {\"type\": \"string\", \"enum\": [\"c\", \"f\"]}}, \"required\": [\"location\"]}}"
    "}\n"
    "{\"type\": \"function\", \"function\": {\"name\": \"get_time\", \"description\": \"Local time.\", \"parame"
    "ters\": {\"type\": \"object\", \"properties\": {\"tz\": {\"type\": \"string\"}, \"days\": {\"type\": \"intege"
    "r\"}}}}}\n"
    "</tools>\n"
    "\n"
    "For each function call, return a json object with function name and arguments within <tool_"
    "call></tool_call> XML tags:\n"
    "<tool_call>\n"
    "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
    "</tool_call><|im_end|>\n"
    "<|im_start|>user\n"
    "Weather in Paris and the time?<|im_end|>\n"
    "<|im_start|>assistant\n"
    "<tool_call>\n"
    "{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\", \"unit\": \"c\"}}\n"
    "</tool_call>\n"
    "<tool_call>\n"
    "{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\", \"days\": 2}}\n"
    "</tool_call><|im_end|>\n"
    "<|im_start|>user\n"
    "<tool_response>\n"
    "{\"temp\": 21}\n"
    "</tool_response>\n"
    "<tool_response>\n"
    "10:00\n"
    "</tool_response><|im_end|>\n"
    "<|im_start|>assistant\n"
    "21 C, 10:00.<|im_end|>\n"
    "<|im_start|>user\n"
    "Thanks<|im_end|>\n"
    "<|im_start|>assistant\n";
const char* const k_gemma4_sys_user =
    "<|turn>system\n"
    "Be brief.<|tool>declaration:get_weather{description:<|\"|>Weather at a place.<|\"|>,parameter"
    "s:{properties:{location:{description:<|\"|>City<|\"|>,type:<|\"|>STRING<|\"|>},unit:{enum:[<|\"|"
    ">c<|\"|>,<|\"|>f<|\"|>],type:<|\"|>STRING<|\"|>}},required:[<|\"|>location<|\"|>],type:<|\"|>OBJECT"
    "<|\"|>}}<tool|><|tool>declaration:get_time{description:<|\"|>Local time.<|\"|>,parameters:{pro"
    "perties:{days:{type:<|\"|>INTEGER<|\"|>},tz:{type:<|\"|>STRING<|\"|>}},type:<|\"|>OBJECT<|\"|>}}<"
    "tool|><turn|>\n"
    "<|turn>user\n"
    "Weather in Paris?<turn|>\n"
    "<|turn>model\n";
const char* const k_gemma4_history =
    "<|turn>system\n"
    "<|tool>declaration:get_weather{description:<|\"|>Weather at a place.<|\"|>,parameters:{proper"
    "ties:{location:{description:<|\"|>City<|\"|>,type:<|\"|>STRING<|\"|>},unit:{enum:[<|\"|>c<|\"|>,<"
    "|\"|>f<|\"|>],type:<|\"|>STRING<|\"|>}},required:[<|\"|>location<|\"|>],type:<|\"|>OBJECT<|\"|>}}<t"
    "ool|><|tool>declaration:get_time{description:<|\"|>Local time.<|\"|>,parameters:{properties:{"
    "days:{type:<|\"|>INTEGER<|\"|>},tz:{type:<|\"|>STRING<|\"|>}},type:<|\"|>OBJECT<|\"|>}}<tool|><tu"
    "rn|>\n"
    "<|turn>user\n"
    "Weather in Paris and the time?<turn|>\n"
    "<|turn>model\n"
    "<|tool_call>call:get_weather{location:<|\"|>Paris<|\"|>,unit:<|\"|>c<|\"|>}<tool_call|><|tool_c"
    "all>call:get_time{days:2,tz:<|\"|>CET<|\"|>}<tool_call|><|tool_response>response:get_weather{"
    "value:<|\"|>{\"temp\": 21}<|\"|>}<tool_response|><|tool_response>response:get_time{value:<|\"|>1"
    "0:00<|\"|>}<tool_response|>";
const char* const k_gemma4_history2 =
    "<|turn>system\n"
    "<|tool>declaration:get_weather{description:<|\"|>Weather at a place.<|\"|>,parameters:{proper"
    "ties:{location:{description:<|\"|>City<|\"|>,type:<|\"|>STRING<|\"|>},unit:{enum:[<|\"|>c<|\"|>,<"
    "|\"|>f<|\"|>],type:<|\"|>STRING<|\"|>}},required:[<|\"|>location<|\"|>],type:<|\"|>OBJECT<|\"|>}}<t"
    "ool|><|tool>declaration:get_time{description:<|\"|>Local time.<|\"|>,parameters:{properties:{"
    "days:{type:<|\"|>INTEGER<|\"|>},tz:{type:<|\"|>STRING<|\"|>}},type:<|\"|>OBJECT<|\"|>}}<tool|><tu"
    "rn|>\n"
    "<|turn>user\n"
    "Weather in Paris and the time?<turn|>\n"
    "<|turn>model\n"
    "<|tool_call>call:get_weather{location:<|\"|>Paris<|\"|>,unit:<|\"|>c<|\"|>}<tool_call|><|tool_c"
    "all>call:get_time{days:2,tz:<|\"|>CET<|\"|>}<tool_call|><|tool_response>response:get_weather{"
    "value:<|\"|>{\"temp\": 21}<|\"|>}<tool_response|><|tool_response>response:get_time{value:<|\"|>1"
    "0:00<|\"|>}<tool_response|>21 C, 10:00.<turn|>\n"
    "<|turn>user\n"
    "Thanks<turn|>\n"
    "<|turn>model\n";

// The tools as Qwen3.5's and GLM's templates print them (tojson of the whole tool).
const std::string kToolLines =
    "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather at a place.\", "
    "\"parameters\": {\"type\": \"object\", \"properties\": {\"location\": {\"type\": \"string\", \"description\": "
    "\"City\"}, \"unit\": {\"type\": \"string\", \"enum\": [\"c\", \"f\"]}}, \"required\": [\"location\"]}}}\n"
    "{\"type\": \"function\", \"function\": {\"name\": \"get_time\", \"description\": \"Local time.\", \"parameters\": "
    "{\"type\": \"object\", \"properties\": {\"tz\": {\"type\": \"string\"}, \"days\": {\"type\": \"integer\"}}}}}";

TEST(ChatTemplateTools, chatml_renders_qwen3s_template_with_tools_and_a_system_message) {
    EXPECT_EQ(render("chatml", kSystemUser), k_qwen3_sys_user);
}

TEST(ChatTemplateTools, chatml_renders_qwen3s_parallel_calls_and_grouped_results) {
    EXPECT_EQ(render("chatml", history()), k_qwen3_history);
    EXPECT_EQ(render("chatml", history2()), k_qwen3_history2);
}

TEST(ChatTemplateTools, gemma4_renders_gemma4s_declarations_calls_and_results) {
    EXPECT_EQ(render("gemma4", kSystemUser), k_gemma4_sys_user);
    // After results the model turn stays open: no <turn|>, no new generation prompt.
    EXPECT_EQ(render("gemma4", history()), k_gemma4_history);
    EXPECT_EQ(render("gemma4", history2()), k_gemma4_history2);
}

// Trimmed contents, Python's str() of scalar arguments, reasoning split from the content at
// </think> (kept only after the last user message): one conversation for each.
std::vector<ChatMessage> mixed() {
    std::vector<ChatMessage> m = {{"system", "  Be brief. \n"}, {"user", " Flags? "},
                                  {"assistant", "<think>\nweigh it\n</think>\n\n Checking. "}};
    m[2].tool_calls = {{"c1", "get_time", R"({"tz":null,"days":1.5,"utc":true,"list":[1,"a"],"obj":{"k":false}})"}};
    ChatMessage result{"tool", " ok "};
    result.tool_call_id = "c1";
    m.push_back(result);
    m.push_back({"assistant", "Done."});
    m.push_back({"user", "More"});
    return m;
}

std::vector<ChatMessage> reasoning() {
    std::vector<ChatMessage> m = {{"user", "Time?"}, {"assistant", "<think>\nweigh it\n</think>\n\nChecking."}};
    m[1].tool_calls = {{"c1", "get_time", R"({"tz":"CET"})"}};
    ChatMessage result{"tool", "10:00"};
    result.tool_call_id = "c1";
    m.push_back(result);
    return m;
}

// Qwen3 keeps contents as they are but splits reasoning off an assistant turn's content.
TEST(ChatTemplateTools, chatml_splits_reasoning_as_qwen3s_template_does) {
    const std::string tools_turn(k_qwen3_history, std::string_view(k_qwen3_history).find("<|im_start|>user"));
    const std::string_view opening = "<|im_start|>system\n";
    const std::string system_turn = std::string(opening) + "  Be brief. \n\n\n" + tools_turn.substr(opening.size());
    EXPECT_EQ(render("chatml", mixed()),
              system_turn + "<|im_start|>user\n Flags? <|im_end|>\n<|im_start|>assistant\n Checking. \n<tool_call>\n"
                            "{\"name\": \"get_time\", \"arguments\": {\"tz\": null, \"days\": 1.5, \"utc\": true, "
                            "\"list\": [1, \"a\"], \"obj\": {\"k\": false}}}\n</tool_call><|im_end|>\n<|im_start|>user\n"
                            "<tool_response>\n ok \n</tool_response><|im_end|>\n<|im_start|>assistant\nDone.<|im_end|>\n"
                            "<|im_start|>user\nMore<|im_end|>\n<|im_start|>assistant\n");
    EXPECT_EQ(render("chatml", reasoning()),
              tools_turn + "<|im_start|>user\nTime?<|im_end|>\n<|im_start|>assistant\n<think>\nweigh it\n</think>\n\n"
                           "Checking.\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n"
                           "</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n10:00\n</tool_response><|im_end|>\n"
                           "<|im_start|>assistant\n");
}

// Expectations: Qwen3.5's chat_template.jinja rendered with jinja2 (see docs/models/qwen35.md
// §5.1 for the revision), the system turn's tool block then what follows it.
TEST(ChatTemplateTools, chatml_thinking_renders_qwen35s_xml_calls) {
    const std::string system =
        "<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>\n" + kToolLines +
        "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n"
        "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n"
        "<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n"
        "</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the "
        "specified format: an inner <function=...></function> block must be nested within <tool_call></tool_call> "
        "XML tags\n- Required parameters MUST be specified\n- You may provide optional reasoning for your function "
        "call in natural language BEFORE the function call, but NOT after\n- If there is no function call available, "
        "answer the question like normal with your current knowledge and do not tell the user about function "
        "calls\n</IMPORTANT>";
    const std::string calls =
        "<tool_call>\n<function=get_weather>\n<parameter=location>\nParis\n</parameter>\n<parameter=unit>\nc\n"
        "</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_time>\n<parameter=tz>\nCET\n"
        "</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call><|im_end|>\n<|im_start|>user\n"
        "<tool_response>\n{\"temp\": 21}\n</tool_response>\n<tool_response>\n10:00\n</tool_response><|im_end|>\n";
    EXPECT_EQ(render("chatml-thinking", kSystemUser),
              system + "\n\nBe brief.<|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n"
                       "<|im_start|>assistant\n<think>\n");
    // An assistant turn after the last user message gets a (here empty) think block.
    EXPECT_EQ(render("chatml-thinking", history()),
              system + "<|im_end|>\n<|im_start|>user\nWeather in Paris and the time?<|im_end|>\n"
                       "<|im_start|>assistant\n<think>\n\n</think>\n\n" + calls + "<|im_start|>assistant\n<think>\n");
    EXPECT_EQ(render("chatml-thinking", history2()),
              system + "<|im_end|>\n<|im_start|>user\nWeather in Paris and the time?<|im_end|>\n"
                       "<|im_start|>assistant\n" + calls + "<|im_start|>assistant\n21 C, 10:00.<|im_end|>\n"
                       "<|im_start|>user\nThanks<|im_end|>\n<|im_start|>assistant\n<think>\n");
    EXPECT_EQ(render("chatml-thinking", mixed()),
              system + "\n\nBe brief.<|im_end|>\n<|im_start|>user\nFlags?<|im_end|>\n<|im_start|>assistant\n"
                       " Checking.\n\n<tool_call>\n<function=get_time>\n<parameter=tz>\nNone\n</parameter>\n"
                       "<parameter=days>\n1.5\n</parameter>\n<parameter=utc>\nTrue\n</parameter>\n<parameter=list>\n"
                       "[1, \"a\"]\n</parameter>\n<parameter=obj>\n{\"k\": false}\n</parameter>\n</function>\n"
                       "</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\nok\n</tool_response><|im_end|>\n"
                       "<|im_start|>assistant\nDone.<|im_end|>\n<|im_start|>user\nMore<|im_end|>\n"
                       "<|im_start|>assistant\n<think>\n");
    EXPECT_EQ(render("chatml-thinking", reasoning()),
              system + "<|im_end|>\n<|im_start|>user\nTime?<|im_end|>\n<|im_start|>assistant\n<think>\nweigh it\n"
                       "</think>\n\nChecking.\n\n<tool_call>\n<function=get_time>\n<parameter=tz>\nCET\n</parameter>\n"
                       "</function>\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n10:00\n"
                       "</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n");
}

TEST(ChatTemplateTools, chatml_thinking_refuses_what_qwen35s_template_raises_on) {
    auto t = ChatTemplate::builtin("chatml-thinking");
    ASSERT_TRUE(t.ok());
    auto late_system = t->apply({{"user", "Hi"}, {"system", "Be brief."}}, true, kTools);
    ASSERT_FALSE(late_system.ok());
    EXPECT_NE(late_system.error().message().find("system message only first"), std::string::npos);
    auto no_query = t->apply({{"system", "Be brief."}}, true, kTools);
    ASSERT_FALSE(no_query.ok());
    EXPECT_NE(no_query.error().message().find("needs a user message"), std::string::npos);
}

// Expectations: GLM-4.6's chat template rendered with jinja2 (docs/models/glm-ocr.md §4.1 names
// the revision), except the generation prompt: the template ends in "<|assistant|>", the built-in
// in GLM-OCR's "<|assistant|>\n".
TEST(ChatTemplateTools, glm4_renders_glm_arg_key_calls_and_observations) {
    const std::string tools =
        "[gMASK]<sop><|system|>\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" + kToolLines +
        "\n</tools>\n\nFor each function call, output the function name and arguments within the following XML "
        "format:\n<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n<arg_value>{arg-value-1}</arg_value>\n"
        "<arg_key>{arg-key-2}</arg_key>\n<arg_value>{arg-value-2}</arg_value>\n...\n</tool_call>";
    const std::string calls =
        "<|user|>\nWeather in Paris and the time?<|assistant|>\n<think></think>\n<tool_call>get_weather\n"
        "<arg_key>location</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>unit</arg_key>\n"
        "<arg_value>c</arg_value>\n</tool_call>\n<tool_call>get_time\n<arg_key>tz</arg_key>\n"
        "<arg_value>CET</arg_value>\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>"
        "<|observation|>\n<tool_response>\n{\"temp\": 21}\n</tool_response>\n<tool_response>\n10:00\n"
        "</tool_response>";
    EXPECT_EQ(render("glm4", kSystemUser), tools + "<|system|>\nBe brief.<|user|>\nWeather in Paris?<|assistant|>\n");
    EXPECT_EQ(render("glm4", history()), tools + calls + "<|assistant|>\n");
    EXPECT_EQ(render("glm4", history2()),
              tools + calls + "<|assistant|>\n<think></think>\n21 C, 10:00.<|user|>\nThanks<|assistant|>\n");
    EXPECT_EQ(render("glm4", mixed()),
              tools + "<|system|>\n  Be brief. \n<|user|>\n Flags? <|assistant|>\n<think></think>\nChecking.\n"
                      "<tool_call>get_time\n<arg_key>tz</arg_key>\n<arg_value>null</arg_value>\n<arg_key>days"
                      "</arg_key>\n<arg_value>1.5</arg_value>\n<arg_key>utc</arg_key>\n<arg_value>true</arg_value>\n"
                      "<arg_key>list</arg_key>\n<arg_value>[1, \"a\"]</arg_value>\n<arg_key>obj</arg_key>\n"
                      "<arg_value>{\"k\": false}</arg_value>\n</tool_call><|observation|>\n<tool_response>\n ok \n"
                      "</tool_response><|assistant|>\n<think></think>\nDone.<|user|>\nMore<|assistant|>\n");
    EXPECT_EQ(render("glm4", reasoning()),
              tools + "<|user|>\nTime?<|assistant|>\n<think>weigh it</think>\nChecking.\n<tool_call>get_time\n"
                      "<arg_key>tz</arg_key>\n<arg_value>CET</arg_value>\n</tool_call><|observation|>\n"
                      "<tool_response>\n10:00\n</tool_response><|assistant|>\n");
}

TEST(ChatTemplateTools, tool_turns_render_without_tools_and_plain_turns_are_unchanged) {
    // A history with calls but no tools offered now (tool_choice none): the turns still render.
    const std::string out = render("chatml", history(), {});
    EXPECT_EQ(out.rfind("<|im_start|>user\nWeather", 0), 0u) << out;
    EXPECT_NE(out.find("<tool_response>\n10:00\n</tool_response><|im_end|>"), std::string::npos);
    // Without tools or tool turns, the plain rendering.
    auto plain = ChatTemplate::builtin("chatml")->apply(kSystemUser, true);
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(*plain, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n"
                      "<|im_start|>assistant\n");
}

TEST(ChatTemplateTools, templates_without_tools_and_bad_arguments_are_refused) {
    auto gemma3 = ChatTemplate::builtin("gemma")->apply(kSystemUser, true, kTools);
    ASSERT_FALSE(gemma3.ok());
    EXPECT_NE(gemma3.error().message().find("does not render tools"), std::string::npos);
    auto m = history();
    m[1].tool_calls[0].arguments = "[1, 2]";
    auto bad = ChatTemplate::builtin("chatml")->apply(m, true, kTools);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message().find("not a JSON object"), std::string::npos);
}

}  // namespace
}  // namespace tdm::test
