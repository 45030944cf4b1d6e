"""Non-blocking collectives next to computation (`colltune overlap`) and its report section."""
