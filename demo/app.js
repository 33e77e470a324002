document.title += " (scripts ran)";
