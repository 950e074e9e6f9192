// A minimal IntelliJ Platform plugin: LSP4IJ starts `headstart serve` and does the LSP.
// Needs JetBrains' repositories (cache-redirector.jetbrains.com, plugins.jetbrains.com),
// Gradle 8.13+ and a JDK 21; see README.md.
plugins {
    id("org.jetbrains.kotlin.jvm") version "2.1.20"
    id("org.jetbrains.intellij.platform") version "2.11.0"
}

group = "dev.headstart"
version = "0.1.0"

repositories {
    mavenCentral()
    intellijPlatform {
        defaultRepositories()
    }
}

dependencies {
    intellijPlatform {
        intellijIdeaCommunity(providers.gradleProperty("platformVersion"))
        plugin("com.redhat.devtools.lsp4ij", providers.gradleProperty("lsp4ijVersion").get())
    }
}

kotlin {
    jvmToolchain(21)
}

intellijPlatform {
    pluginConfiguration {
        ideaVersion {
            sinceBuild = providers.gradleProperty("pluginSinceBuild")
        }
    }
    // Nothing to index in a plugin without settings pages; skipping it spares starting an IDE.
    buildSearchableOptions = false
}
