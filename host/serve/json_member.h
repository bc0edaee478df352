/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/json_member.h: a request field that is present, for the readers of request
// bodies (nlohmann::json, and ordered_json where member order matters). Not here: checking
// a field's type or range (each reader's own rules).
#pragma once

namespace tdm::server {

// The member `key` of `obj` when it is there and not null (OpenAI's clients send null for
// "not set"); nullptr otherwise, also when `obj` is null or not an object.
template <class Json>
const Json* json_member(const Json* obj, const char* key) {
    if (!obj) return nullptr;
    const auto it = obj->find(key);  // end() for a value that is not an object
    return it == obj->end() || it->is_null() ? nullptr : &*it;
}

template <class Json>
const Json* json_member(const Json& obj, const char* key) {
    return json_member(&obj, key);
}

}  // namespace tdm::server
