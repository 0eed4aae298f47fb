"""An AWR report read for what the log writer sees: parse.py reads Oracle's text or HTML layout
(awrrpt_*.txt or .html: the report header, the Load Profile, the Top Events, the Foreground and
Background Wait Events and the Instance Activity Stats) into figures, each with the report's line it
came from; excerpt.py reads a report's tables as a web page quotes them (cells on lines of their
own or run together, the seeds' form); a figure the report lacks is one line saying which."""
