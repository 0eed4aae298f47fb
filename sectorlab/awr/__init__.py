"""An AWR report read for what the log writer sees: parse.py reads Oracle's text or HTML layout
(awrrpt_*.txt or .html: the report header, the Load Profile, the Top Events, the Foreground and
Background Wait Events and the Instance Activity Stats) into figures, each with the report's line it
came from; a figure the report lacks is one line saying which."""
