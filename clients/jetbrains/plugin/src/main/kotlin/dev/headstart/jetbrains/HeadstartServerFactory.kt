package dev.headstart.jetbrains

import com.intellij.execution.configurations.GeneralCommandLine
import com.intellij.openapi.project.Project
import com.redhat.devtools.lsp4ij.LanguageServerFactory
import com.redhat.devtools.lsp4ij.server.OSProcessStreamConnectionProvider
import com.redhat.devtools.lsp4ij.server.StreamConnectionProvider

/**
 * Registered on LSP4IJ's `server` extension point (plugin.xml): LSP4IJ asks it for the
 * process of a project's Headstart server and speaks LSP with it, inline completion
 * included, so the plugin needs no LSP code of its own.
 */
class HeadstartServerFactory : LanguageServerFactory {
    override fun createConnectionProvider(project: Project): StreamConnectionProvider =
        HeadstartProcess(project)
}

/**
 * `headstart serve` over stdio, in the project's folder. The program is
 * `$HEADSTART_COMMAND` when set (a full path, for an IDE whose PATH lacks the virtualenv),
 * else `headstart` from PATH. The server takes its settings from the environment it
 * inherits here (HEADSTART_BACKEND_URL, HEADSTART_MODEL, HEADSTART_API_KEY, …); the
 * console environment is used so that a login shell's PATH and variables apply on macOS.
 */
class HeadstartProcess(project: Project) : OSProcessStreamConnectionProvider() {
    init {
        val program = System.getenv("HEADSTART_COMMAND")?.takeIf { it.isNotBlank() } ?: "headstart"
        val commandLine = GeneralCommandLine(program, "serve")
            .withParentEnvironmentType(GeneralCommandLine.ParentEnvironmentType.CONSOLE)
        project.basePath?.let { commandLine.withWorkDirectory(it) }
        setCommandLine(commandLine)
    }
}
