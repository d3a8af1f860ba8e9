#include "common/command_line.h"

#include <iostream>
#include <map>
#include <sstream>
#include <vector>

#include "common/exit_codes.h"

namespace perfgate::cmdline {
namespace {

// The visible subcommands of `app`, in the order they were added.
std::vector<const CLI::App*> Subcommands(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App* sub) { return !sub->get_group().empty(); });
}

// The visible named options of `app` (not positionals).
std::vector<const CLI::Option*> NamedOptions(const CLI::App& app) {
  return app.get_options([](const CLI::Option* o) {
    return !o->get_group().empty() && !o->get_positional() &&
           (!o->get_lnames().empty() || !o->get_snames().empty());
  });
}

std::vector<std::string> Spellings(const CLI::Option& o) {
  std::vector<std::string> out;
  for (const auto& s : o.get_snames()) out.push_back("-" + s);
  for (const auto& l : o.get_lnames()) out.push_back("--" + l);
  return out;
}

// The values an option offers: those of its IsMember check ("TEXT:{a,b}" in its type name).
std::vector<std::string> Choices(const CLI::Option& o) {
  const std::string type = o.get_type_name();
  const auto open = type.find('{');
  const auto close = type.find('}', open);
  std::vector<std::string> out;
  if (open == std::string::npos || close == std::string::npos) return out;
  std::stringstream list(type.substr(open + 1, close - open - 1));
  for (std::string item; std::getline(list, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : " ") + i;
  return out;
}

// Every command path of `app` ("" for the top, "baseline create", ...) with its app.
void Walk(const CLI::App& app, const std::string& path,
          std::vector<std::pair<std::string, const CLI::App*>>* out) {
  out->emplace_back(path, &app);
  for (const auto* sub : Subcommands(app)) {
    Walk(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), out);
  }
}

// The subcommand the parse reached (the deepest one parsed).
const CLI::App* Reached(const CLI::App& app) {
  const CLI::App* at = &app;
  for (auto subs = at->get_subcommands(); !subs.empty(); subs = at->get_subcommands()) {
    at = subs.front();
  }
  return at;
}

std::string CommandName(const CLI::App& top, const CLI::App& reached) {
  std::string name;
  for (const CLI::App* a = &reached; a != nullptr && a != &top; a = a->get_parent()) {
    name = a->get_name() + (name.empty() ? "" : " " + name);
  }
  return top.get_name() + (name.empty() ? "" : " " + name);
}

// roff: a leading dot or quote, and backslashes, escaped.
std::string Roff(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out = "\\&" + out;
  return out;
}

// CLI11's message, with extra words said the way people read them: "unknown option --x",
// "unexpected argument y".
std::string Explain(const CLI::ParseError& e) {
  std::string what = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr) return what;
  const auto colon = what.find(": ");
  if (colon == std::string::npos) return what;
  std::string out;
  std::stringstream words(what.substr(colon + 2));
  for (std::string w; words >> w;) {
    if (!out.empty()) out += "; ";
    out += (w.size() > 1 && w[0] == '-' ? "unknown option " : "unexpected argument ") + w;
  }
  return out.empty() ? what : out;
}

}  // namespace

CLI::Option* AddChoice(CLI::App* app, const std::string& name, std::string* value,
                       const std::vector<std::string>& choices, const std::string& description) {
  return app->add_option(name, *value, description)->check(CLI::IsMember(choices));
}

int ParseAndRun(CLI::App& app, int argc, const char* const* argv, const Action& action) {
  if (argc <= 1 && app.get_require_subcommand_min() > 0) {
    std::cerr << app.help();
    return exit_code::kInvalid;
  }
  const std::string first = argc > 1 ? argv[1] : "";
  if (!first.empty() && first[0] != '-' && !Subcommands(app).empty()) {
    bool known = false;
    for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      known |= sub->check_name(first);
    }
    if (!known) {
      std::string names;
      for (const auto* sub : Subcommands(app)) names += " " + sub->get_name();
      std::cerr << app.get_name() << ": unknown command \"" << first << "\"\ncommands:" << names
                << "\nRun '" << app.get_name() << " --help' for usage.\n";
      return exit_code::kInvalid;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string where = CommandName(app, *Reached(app));
    std::cerr << where << ": " << Explain(e) << "\nRun '" << where << " --help' for usage.\n";
    return exit_code::kInvalid;
  }
  if (!action) {
    std::cerr << app.help();
    return exit_code::kInvalid;
  }
  return action();
}

std::string BashCompletion(const CLI::App& app, const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, const CLI::App*>> paths;
  Walk(app, "", &paths);
  const std::string fn = "_" + app.get_name();
  std::ostringstream subs, opts, values, takes;
  for (const auto& [path, cmd] : paths) {
    std::vector<std::string> sub_names;
    for (const auto* s : Subcommands(*cmd)) sub_names.push_back(s->get_name());
    if (!sub_names.empty())
      subs << "    \"" << path << "\") echo \"" << Join(sub_names) << "\";;\n";
    std::vector<std::string> all;
    for (const auto* o : NamedOptions(*cmd)) {
      const auto spellings = Spellings(*o);
      all.insert(all.end(), spellings.begin(), spellings.end());
      if (o->get_type_size() == 0) continue;  // a flag
      std::string keys;
      for (const auto& s : spellings)
        keys += (keys.empty() ? "" : "|") + ("\"" + path + " " + s + "\"");
      takes << "    " << keys << ") return 0;;\n";
      if (const auto choices = Choices(*o); !choices.empty()) {
        values << "    " << keys << ") echo \"" << Join(choices) << "\";;\n";
      }
    }
    opts << "    \"" << path << "\") echo \"" << Join(all) << "\";;\n";
  }
  std::ostringstream out;
  out << "# bash completion for " << Join(names) << " (generated by `" << app.get_name()
      << " completion bash`)\n"
      << fn << "_subcommands() {\n  case \"$1\" in\n"
      << subs.str() << "  esac\n}\n"
      << fn << "_options() {\n  case \"$1\" in\n"
      << opts.str() << "  esac\n}\n"
      << fn << "_values() {\n  case \"$1\" in\n"
      << values.str() << "  esac\n}\n"
      << fn << "_takes_value() {\n  case \"$1\" in\n"
      << takes.str() << "  esac\n  return 1\n}\n"
      << fn << "() {\n"
      << "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"\" path=\"\" i w subs\n"
      << "  ((COMP_CWORD > 0)) && prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
      << "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      << "    w=\"${COMP_WORDS[i]}\"\n"
      << "    if [[ \"$w\" == -* ]]; then\n"
      << "      " << fn << "_takes_value \"$path $w\" && ((i++))\n"
      << "      continue\n"
      << "    fi\n"
      << "    subs=\" $(" << fn << "_subcommands \"$path\") \"\n"
      << "    [[ \"$subs\" == *\" $w \"* ]] && path=\"${path:+$path }$w\"\n"
      << "  done\n"
      << "  if [[ \"$prev\" == -* ]] && " << fn << "_takes_value \"$path $prev\"; then\n"
      << "    local v\n"
      << "    v=\"$(" << fn << "_values \"$path $prev\")\"\n"
      << "    if [[ -n \"$v\" ]]; then\n"
      << "      mapfile -t COMPREPLY < <(compgen -W \"$v\" -- \"$cur\")\n"
      << "    else\n"
      << "      mapfile -t COMPREPLY < <(compgen -f -- \"$cur\")\n"
      << "    fi\n"
      << "    return 0\n"
      << "  fi\n"
      << "  if [[ \"$cur\" == -* ]]; then\n"
      << "    mapfile -t COMPREPLY < <(compgen -W \"$(" << fn
      << "_options \"$path\")\" -- \"$cur\")\n"
      << "    return 0\n"
      << "  fi\n"
      << "  mapfile -t COMPREPLY < <(compgen -W \"$(" << fn
      << "_subcommands \"$path\")\" -- \"$cur\"; "
      << "compgen -f -- \"$cur\")\n"
      << "}\n"
      << "complete -o filenames -F " << fn << " " << Join(names) << "\n";
  return out.str();
}

std::string ZshCompletion(const CLI::App& app, const std::vector<std::string>& names) {
  // zsh runs the bash completion through bashcompinit: one generated source for both shells.
  return "#compdef " + Join(names) + "\n# zsh completion (generated by `" + app.get_name() +
         " completion zsh`)\nautoload -U +X bashcompinit && bashcompinit\n" +
         BashCompletion(app, names);
}

std::string ManPage(const CLI::App& app, const std::string& date) {
  std::ostringstream out;
  std::string upper = app.get_name();
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  out << ".TH " << upper << " 1 \"" << date << "\" \"" << app.get_name() << "\" \"User Commands\"\n"
      << ".SH NAME\n"
      << app.get_name() << " \\- " << Roff(app.get_description()) << "\n"
      << ".SH SYNOPSIS\n.B " << app.get_name() << "\n.I command\n[\\fIoptions\\fR]\n"
      << ".SH COMMANDS\n";
  std::vector<std::pair<std::string, const CLI::App*>> paths;
  Walk(app, "", &paths);
  for (const auto& [path, cmd] : paths) {
    if (path.empty()) continue;
    out << ".SS \"" << app.get_name() << " " << path;
    for (const auto* o :
         cmd->get_options([](const CLI::Option* p) { return p->get_positional(); })) {
      out << " " << o->get_name(true);
    }
    out << "\"\n" << Roff(cmd->get_description()) << "\n";
    for (const auto* o : NamedOptions(*cmd)) {
      if (o == cmd->get_help_ptr()) continue;
      std::string spell;
      for (const auto& s : Spellings(*o)) spell += (spell.empty() ? "" : ", ") + s;
      out << ".TP\n.B " << Roff(spell);
      if (o->get_type_size() != 0) out << " \" \" \\fI" << Roff(o->get_type_name()) << "\\fR";
      out << "\n" << Roff(o->get_description()) << "\n";
    }
  }
  out << ".SH EXIT STATUS\n" << Roff(exit_code::kTable) << "\n";
  if (!app.get_footer().empty()) out << ".SH NOTES\n" << Roff(app.get_footer()) << "\n";
  return out.str();
}

}  // namespace perfgate::cmdline
