// Jinja parser: tokens -> syntax tree, with jinja2's grammar and operator precedence.
//
// Unknown tags, filters and tests are rejected at parse time as jinja2's compiler does. Errors are
// RenderError carrying the line. Pure function of its input; thread-safe.
#pragma once

#include <vector>

#include "text/jinja/ast.h"
#include "text/jinja/lexer.h"

namespace ignis::text::jinja {

Body parse(const std::vector<Token>& tokens);

}  // namespace ignis::text::jinja
